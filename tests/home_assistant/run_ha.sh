#!/usr/bin/env bash
# run_ha.sh CONFIG_DIR HTTP_PORT MQTT_PORT MQTT_USER MQTT_PASSWORD
#
# Starts Home Assistant Core 2024.3.3 (from the venv HA_VENV, which
# tests/run.sh makes as .venv-ha) fully offline,
# already onboarded, with the MQTT integration configured as a config entry
# (broker 127.0.0.1:MQTT_PORT, discovery on, prefix "homeassistant", default
# birth message "online" on homeassistant/status, default will "offline").
#
# CONFIG_DIR is wiped and recreated on every run (fresh registries, no
# retained state from an earlier run).  The script then `exec`s hass in the
# foreground (stop it with SIGTERM/SIGINT; it shuts down in ~1-2 s).
#
# Auth: an owner user "admin" (password "admin", for the UI at
# http://127.0.0.1:HTTP_PORT) and a long-lived access token are written into
# .storage/auth; the JWT for it is computed here and written to
# CONFIG_DIR/token (10-year expiry).  Use it as
#   curl -H "Authorization: Bearer $(cat CONFIG_DIR/token)" http://127.0.0.1:HTTP_PORT/api/
#
# Startup time on this 2-core machine (measured): ~3.5 s from running this
# script to the API reporting RUNNING when the CPU is idle (hass itself logs
# "Home Assistant initialized in ~1.8s"; the rest is Python imports and the
# bcrypt hash below); 7-8 s when the CPU is busy/under strace.  The very
# first start after installing the venv is slower (.pyc compilation).
# HA is ready when either:
#   * `curl -s -H "Authorization: Bearer $(cat CONFIG_DIR/token)" \
#        http://127.0.0.1:HTTP_PORT/api/config` returns JSON with "state":"RUNNING"
#     (GET /api/ answers {"message":"API running."} a bit earlier, as soon as
#     http is up, before MQTT is necessarily connected), or
#   * CONFIG_DIR/home-assistant.log contains "Home Assistant initialized in",
#   * and MQTT is connected when the broker sees the birth message
#     (mosquitto_sub -t homeassistant/status shows "online").
#     RUNNING does not imply MQTT is connected: if the broker is down, HA
#     logs "Failed to connect to MQTT server" and retries every ~10-15 s.
#
# hass flags used: --skip-pip (never pip-install at runtime: every
# requirement is pre-installed in the venv; HA_SKIP_PIP=0 drops the flag, HA
# then only verifies the pinned requirements, finds them installed and still
# does not touch the network) and --log-file.  Logs go to
# stdout and CONFIG_DIR/home-assistant.log.
set -euo pipefail

if [ $# -ne 5 ]; then
  echo "usage: $0 CONFIG_DIR HTTP_PORT MQTT_PORT MQTT_USER MQTT_PASSWORD" >&2
  exit 2
fi
CONFIG_DIR=$1 HTTP_PORT=$2 MQTT_PORT=$3 MQTT_USER=$4 MQTT_PASSWORD=$5
VENV=${HA_VENV:?set HA_VENV to the Home Assistant venv (.venv-ha, made by tests/run.sh)}

rm -rf -- "$CONFIG_DIR"
mkdir -p -- "$CONFIG_DIR/.storage"
CONFIG_DIR=$(cd "$CONFIG_DIR" && pwd)

cat >"$CONFIG_DIR/configuration.yaml" <<EOF
# Minimal: no default_config (it would pull in zeroconf/ssdp/dhcp/cloud/...
# which want network access and extra packages).
homeassistant:
  name: Test
  latitude: 0
  longitude: 0
  elevation: 0
  unit_system: metric
  time_zone: UTC
  currency: EUR
  country: DE
  internal_url: "http://127.0.0.1:${HTTP_PORT}"
http:
  server_host: 127.0.0.1
  server_port: ${HTTP_PORT}
api:
logger:
  default: info
EOF

HA_CONFIG_DIR="$CONFIG_DIR" MQTT_PORT="$MQTT_PORT" MQTT_USER="$MQTT_USER" \
MQTT_PASSWORD="$MQTT_PASSWORD" "$VENV/bin/python" - <<'PY'
import base64, json, os, secrets, time, uuid
from datetime import datetime, timezone

import bcrypt
import jwt

cfg = os.environ["HA_CONFIG_DIR"]
st = os.path.join(cfg, ".storage")
now = datetime.now(timezone.utc)


def write(key, data, version=1, minor=1, private=True):
    path = os.path.join(st, key)
    with open(path, "w") as f:
        json.dump({"version": version, "minor_version": minor, "key": key,
                   "data": data}, f, indent=2)
    if private:
        os.chmod(path, 0o600)


# --- MQTT config entry -------------------------------------------------------
write("core.config_entries", {"entries": [{
    "entry_id": uuid.uuid4().hex,
    "version": 1,
    "minor_version": 1,
    "domain": "mqtt",
    "title": "127.0.0.1",
    "data": {
        "broker": "127.0.0.1",
        "port": int(os.environ["MQTT_PORT"]),
        "username": os.environ["MQTT_USER"],
        "password": os.environ["MQTT_PASSWORD"],
        "discovery": True,
        "discovery_prefix": "homeassistant",
        "birth_message": {"topic": "homeassistant/status", "payload": "online",
                          "qos": 0, "retain": False},
        "will_message": {"topic": "homeassistant/status", "payload": "offline",
                         "qos": 0, "retain": False},
    },
    "options": {},
    "pref_disable_new_entities": False,
    "pref_disable_polling": False,
    "source": "user",
    "unique_id": None,
    "disabled_by": None,
}]})

# --- onboarding done ---------------------------------------------------------
write("onboarding", {"done": ["user", "core_config", "analytics", "integration"]},
      version=4)

# --- auth: owner user + homeassistant credential + long-lived token ---------
user_id = uuid.uuid4().hex
cred_id = uuid.uuid4().hex
rt_id = uuid.uuid4().hex
jwt_key = secrets.token_hex(64)
expiry = 3650 * 86400
write("auth", {
    "users": [{
        "id": user_id, "group_ids": ["system-admin"], "is_owner": True,
        "is_active": True, "name": "admin", "system_generated": False,
        "local_only": False,
    }],
    "groups": [{"id": "system-admin", "name": "Administrators"},
               {"id": "system-users", "name": "Users"},
               {"id": "system-read-only", "name": "Read Only"}],
    "credentials": [{
        "id": cred_id, "user_id": user_id,
        "auth_provider_type": "homeassistant", "auth_provider_id": None,
        "data": {"username": "admin"},
    }],
    "refresh_tokens": [{
        "id": rt_id, "user_id": user_id, "client_id": None,
        "client_name": "run_ha.sh", "client_icon": None,
        "token_type": "long_lived_access_token",
        "created_at": now.isoformat(),
        "access_token_expiration": float(expiry),
        "token": secrets.token_hex(64), "jwt_key": jwt_key,
        "last_used_at": None, "last_used_ip": None, "expire_at": None,
        "credential_id": None, "version": "2024.3.3",
    }],
})
pw_hash = bcrypt.hashpw(b"admin", bcrypt.gensalt(rounds=12))
write("auth_provider.homeassistant", {"users": [{
    "username": "admin",
    "password": base64.b64encode(pw_hash).decode(),
}]})
# person for the owner (what onboarding would have created)
write("person", {"items": [{"id": uuid.uuid4().hex, "name": "admin",
                            "user_id": user_id, "device_trackers": [],
                            "picture": None}]}, version=2, private=False)

iat = int(time.time())
token = jwt.encode({"iss": rt_id, "iat": iat, "exp": iat + expiry}, jwt_key,
                   algorithm="HS256")
with open(os.path.join(cfg, "token"), "w") as f:
    f.write(token + "\n")
os.chmod(os.path.join(cfg, "token"), 0o600)
PY

echo "run_ha.sh: config in $CONFIG_DIR, token in $CONFIG_DIR/token, API http://127.0.0.1:$HTTP_PORT/api/" >&2
SKIP_PIP=()
[ "${HA_SKIP_PIP:-1}" = 1 ] && SKIP_PIP=(--skip-pip)
exec "$VENV/bin/hass" -c "$CONFIG_DIR" "${SKIP_PIP[@]}" --log-file "$CONFIG_DIR/home-assistant.log"
