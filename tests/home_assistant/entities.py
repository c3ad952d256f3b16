#!/usr/bin/env python3
"""List the MQTT entities and devices of a Home Assistant started by run_ha.sh.

usage: .venv-ha/bin/python tests/home_assistant/entities.py CONFIG_DIR HTTP_PORT

Prints one JSON document:
  {"entities": [{entity_id, unique_id, name, device, via_device,
                 entity_category, device_class, state, attributes}, ...],
   "devices":  [{id, name, model, manufacturer, configuration_url,
                 via_device, identifiers, sw_version, hw_version}, ...]}

Source: HA's websocket API (config/entity_registry/list,
config/entity_registry/get_entries, config/device_registry/list,
config_entries/get, get_states), authenticated with the token that
run_ha.sh wrote to CONFIG_DIR/token.  The live registries are used because
HA writes .storage/core.entity_registry / core.device_registry only ~10 s
after a change.  If HA is not reachable, it falls back to those .storage
files (states are then null and "source" says "storage").

Only entities that are in the entity registry (i.e. discovered with a
unique_id -- always the case for entities that belong to a device) are
listed; an MQTT entity without unique_id has no registry entry, so its
platform cannot be determined.
"""
from __future__ import annotations

import asyncio
import json
import os
import sys

import aiohttp


async def _ws(port: int, token: str) -> dict:
    url = f"http://127.0.0.1:{port}/api/websocket"
    async with aiohttp.ClientSession() as session, session.ws_connect(
        url, max_msg_size=0
    ) as ws:
        msg = await ws.receive_json()
        assert msg["type"] == "auth_required", msg
        await ws.send_json({"type": "auth", "access_token": token})
        msg = await ws.receive_json()
        if msg["type"] != "auth_ok":
            raise RuntimeError(f"websocket auth failed: {msg}")
        seq = 0

        async def call(payload: dict):
            nonlocal seq
            seq += 1
            await ws.send_json({"id": seq, **payload})
            while True:
                msg = await ws.receive_json()
                if msg.get("id") == seq and msg.get("type") == "result":
                    if not msg["success"]:
                        raise RuntimeError(f"{payload['type']}: {msg['error']}")
                    return msg["result"]

        entries = await call({"type": "config_entries/get", "domain": "mqtt"})
        entities = [
            e
            for e in await call({"type": "config/entity_registry/list"})
            if e["platform"] == "mqtt"
        ]
        extended = {}
        if entities:
            extended = await call(
                {
                    "type": "config/entity_registry/get_entries",
                    "entity_ids": [e["entity_id"] for e in entities],
                }
            )
        devices = await call({"type": "config/device_registry/list"})
        states = await call({"type": "get_states"})
    return {
        "source": "websocket",
        "entry_ids": {e["entry_id"] for e in entries},
        "entities": entities,
        "extended": extended,
        "devices": devices,
        "states": {s["entity_id"]: s for s in states},
    }


def _storage(config_dir: str) -> dict:
    st = os.path.join(config_dir, ".storage")

    def load(key):
        try:
            with open(os.path.join(st, key)) as f:
                return json.load(f)["data"]
        except FileNotFoundError:
            return {}

    entries = load("core.config_entries").get("entries", [])
    entities = [
        e for e in load("core.entity_registry").get("entities", [])
        if e["platform"] == "mqtt"
    ]
    return {
        "source": "storage",
        "entry_ids": {e["entry_id"] for e in entries if e["domain"] == "mqtt"},
        "entities": entities,
        "extended": {e["entity_id"]: e for e in entities},
        "devices": load("core.device_registry").get("devices", []),
        "states": {},
    }


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    config_dir, port = sys.argv[1], int(sys.argv[2])
    with open(os.path.join(config_dir, "token")) as f:
        token = f.read().strip()
    try:
        data = asyncio.run(asyncio.wait_for(_ws(port, token), 30))
    except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as err:
        print(f"HA not reachable ({err!r}); reading .storage", file=sys.stderr)
        data = _storage(config_dir)

    devs_by_id = {d["id"]: d for d in data["devices"]}

    def dev_name(dev_id):
        d = devs_by_id.get(dev_id)
        return (d.get("name_by_user") or d.get("name")) if d else None

    entities = []
    for e in sorted(data["entities"], key=lambda e: e["entity_id"]):
        ext = data["extended"].get(e["entity_id"], {})
        st = data["states"].get(e["entity_id"])
        attrs = st["attributes"] if st else {}
        dev = devs_by_id.get(e.get("device_id"))
        entities.append(
            {
                "entity_id": e["entity_id"],
                "unique_id": e["unique_id"],
                "name": attrs.get("friendly_name") or e.get("name")
                or e.get("original_name"),
                "device": dev_name(e.get("device_id")),
                "via_device": dev_name(dev["via_device_id"]) if dev else None,
                "entity_category": e.get("entity_category"),
                "device_class": attrs.get("device_class")
                or ext.get("device_class") or ext.get("original_device_class"),
                "disabled_by": e.get("disabled_by"),
                "state": st["state"] if st else None,
                "attributes": attrs,
            }
        )

    devices = []
    for d in sorted(data["devices"], key=lambda d: d.get("name") or ""):
        if not set(d.get("config_entries", [])) & data["entry_ids"]:
            continue
        devices.append(
            {
                "id": d["id"],
                "name": d.get("name_by_user") or d.get("name"),
                "model": d.get("model"),
                "manufacturer": d.get("manufacturer"),
                "configuration_url": d.get("configuration_url"),
                "via_device": dev_name(d.get("via_device_id")),
                "identifiers": d.get("identifiers"),
                "sw_version": d.get("sw_version"),
                "hw_version": d.get("hw_version"),
            }
        )

    json.dump(
        {"source": data["source"], "entities": entities, "devices": devices},
        sys.stdout,
        indent=2,
    )
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
