//! `/api/alerts`: whether alerts go out (armed), where they go
//! (destinations, their rules and how delivering to each goes), a test
//! sent to one, and `/api/cameras/{id}/snooze`, a camera silenced for a
//! while. Secrets are write-only: a webhook's is shown once, when it is
//! made; no token, secret or URL that may carry one is ever shown again.

use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::no_such_camera;
use crate::alerts::destination::{self, Destination, MAX_DESTINATIONS, Target, view};
use crate::alerts::message::{Message, Phase};
use crate::alerts::send::{Context, Outcome};
use crate::app::App;
use crate::clock;
use crate::error::{Error, Kind};
use crate::event::format_timestamp;
use crate::json_body::{object, optional_bool};
use crate::store::Delivery;
use crate::web::reply::Reply;

/// The longest snooze: a week.
const MAX_SNOOZE_MINUTES: u64 = 7 * 24 * 60;

/// `GET /api/alerts`.
pub fn get(app: &App) -> Result<Reply, Error> {
    Ok(Reply::json(200, &settings(app)?))
}

fn settings(app: &App) -> Result<Value, Error> {
    let mut settings = shown(app, view)?;
    settings["vapidPublicKey"] = json!(app.vapid()?.public_key());
    settings["nodeUrl"] = json!(app.node_url);
    Ok(settings)
}

/// What the status shows of alerts: armed, cameras snoozed, each
/// destination's name, type and deliveries, and the notices alerts lost.
pub fn status_view(app: &App) -> Result<Value, Error> {
    let mut status = shown(
        app,
        |d| json!({ "id": d.id.to_string(), "name": d.name, "type": d.target.type_name() }),
    )?;
    let lost: u64 = app
        .notices
        .lost()
        .iter()
        .filter(|(name, _)| *name == "alerts")
        .map(|(_, lost)| lost)
        .sum();
    status["noticesLost"] = json!(lost);
    Ok(status)
}

/// Armed, cameras snoozed, and each destination as `each` shows it, with
/// its deliveries.
fn shown(app: &App, each: impl Fn(&Destination) -> Value) -> Result<Value, Error> {
    let now = clock::now_ms();
    let (destinations, deliveries, snoozes) =
        app.db(|s| Ok((s.destinations()?, s.deliveries()?, s.snoozes(now)?)))?;
    let destinations: Vec<Value> = destinations
        .iter()
        .map(|d| {
            let mut shown = each(d);
            shown["delivery"] = delivery_view(&deliveries.get(&d.id).cloned().unwrap_or_default());
            shown
        })
        .collect();
    Ok(json!({
        "armed": app.armed(),
        "snoozed": snoozed_view(&snoozes),
        "destinations": destinations,
    }))
}

fn snoozed_view(snoozes: &std::collections::HashMap<Uuid, i64>) -> Value {
    let mut list: Vec<(&Uuid, &i64)> = snoozes.iter().collect();
    list.sort();
    Value::Array(
        list.into_iter()
            .map(|(camera, until)| {
                json!({ "cameraId": camera.to_string(), "until": format_timestamp(*until) })
            })
            .collect(),
    )
}

fn delivery_view(d: &Delivery) -> Value {
    json!({
        "delivered": d.delivered,
        "lastDeliveredAt": d.last_delivered_ms.map(format_timestamp),
        "lastFailure": d.last_failure,
        "lastFailureAt": d.last_failure.as_ref().and(d.last_failure_ms).map(format_timestamp),
        "queued": d.queued,
        "dropped": { "expired": d.expired, "full": d.overflowed },
    })
}

/// `PATCH /api/alerts` `{"armed": bool}`.
pub fn update(app: &App, body: &[u8]) -> Result<Reply, Error> {
    let fields = object(body)?;
    for name in fields.keys() {
        if name != "armed" {
            return Err(Error::bad_request(format!(
                "{name} is not a setting of alerts"
            )));
        }
    }
    if let Some(armed) = optional_bool(&fields, "armed")? {
        app.set_armed(armed)?;
    }
    get(app)
}

/// `POST /api/alerts/destinations`: 201 with it, and a webhook's secret
/// this once.
pub fn add_destination(app: &App, body: &[u8]) -> Result<Reply, Error> {
    let fields = object(body)?;
    let destination = destination::from_new(&fields)?;
    check_cameras(app, &destination)?;
    let added = app.db(|s| s.add_destination(&destination, clock::now_ms(), MAX_DESTINATIONS))?;
    if !added {
        return Err(Error::new(
            Kind::Conflict,
            format!(
                "the node sends alerts to at most {MAX_DESTINATIONS} destinations: delete one first"
            ),
        ));
    }
    log::info!(
        "alerts: added {} destination {:?} ({})",
        destination.target.type_name(),
        destination.name,
        destination.target.host()
    );
    app.alerts_changed();
    Ok(Reply::json(201, &shown_with_secret(&destination, true)))
}

/// `PATCH /api/alerts/destinations/{id}`.
pub fn update_destination(app: &App, id: Uuid, body: &[u8]) -> Result<Reply, Error> {
    let fields: Map<String, Value> = object(body)?;
    let before = app
        .db(|s| s.destination(id))?
        .ok_or_else(no_such_destination)?;
    let (after, rotated) = destination::patched(&before, &fields)?;
    check_cameras(app, &after)?;
    if after != before {
        if !app.db(|s| s.update_destination(&after))? {
            return Err(no_such_destination());
        }
        log::info!("alerts: changed destination {:?}", after.name);
        app.alerts_changed();
    }
    Ok(Reply::json(200, &shown_with_secret(&after, rotated)))
}

/// `DELETE /api/alerts/destinations/{id}`: with its alerts not delivered.
pub fn delete_destination(app: &App, id: Uuid) -> Result<Reply, Error> {
    if !app.db(|s| s.delete_destination(id))? {
        return Err(no_such_destination());
    }
    log::info!("alerts: deleted destination {id}");
    app.alerts_changed();
    Ok(Reply::empty(204))
}

/// `POST /api/alerts/destinations/{id}/test`: sends a test alert now and
/// says how it went (`delivered`, and why not in plain words).
pub fn test(app: &App, id: Uuid) -> Result<Reply, Error> {
    let destination = app
        .db(|s| s.destination(id))?
        .ok_or_else(no_such_destination)?;
    let now = clock::now_ms();
    let message = Message {
        phase: Phase::Test,
        camera_id: String::new(),
        camera_name: String::new(),
        event: json!({ "id": Uuid::nil().to_string(), "kind": "person", "startedAt": format_timestamp(now) }),
    };
    let vapid = app.vapid()?;
    let cx = Context {
        base: &app.node_url,
        node_name: &app.node_name(),
        vapid: &vapid,
        alert_id: crate::id::new_id(),
        picture: None,
        now_s: (now / 1000) as u64,
    };
    let outcome = app.alert_sender.send(&destination.target, &message, &cx);
    let after = clock::now_ms();
    let (delivered, why) = match outcome {
        Outcome::Delivered => {
            app.db(|s| s.destination_delivered(id, after))?;
            (true, None)
        }
        Outcome::Failed(why) | Outcome::Gone(why) => {
            app.db(|s| s.destination_failed(id, &why, after))?;
            (false, Some(why))
        }
    };
    log::info!(
        "alerts: test to {:?}: {}",
        destination.name,
        why.as_deref().unwrap_or("delivered")
    );
    app.alerts_changed();
    Ok(Reply::json(
        200,
        &json!({ "delivered": delivered, "message": why }),
    ))
}

/// `POST /api/cameras/{id}/snooze` `{"minutes": N}`: no alert of the
/// camera for N minutes (1 to a week) from now.
pub fn snooze(app: &App, camera: Uuid, body: &[u8]) -> Result<Reply, Error> {
    let fields = object(body)?;
    let minutes = fields
        .get("minutes")
        .and_then(Value::as_u64)
        .filter(|m| (1..=MAX_SNOOZE_MINUTES).contains(m))
        .ok_or_else(|| {
            Error::bad_request(format!(
                "minutes must be a whole number from 1 to {MAX_SNOOZE_MINUTES}"
            ))
        })?;
    app.db(|s| s.camera(camera))?.ok_or_else(no_such_camera)?;
    let now = clock::now_ms();
    let until = now + minutes as i64 * 60_000;
    app.db(|s| s.snooze(camera, Some(until), now))?;
    log::info!("alerts: camera {camera} snoozed for {minutes} min");
    app.alerts_changed();
    Ok(Reply::json(
        200,
        &json!({ "cameraId": camera.to_string(), "until": format_timestamp(until) }),
    ))
}

/// `DELETE /api/cameras/{id}/snooze`: its alerts again.
pub fn wake(app: &App, camera: Uuid) -> Result<Reply, Error> {
    app.db(|s| s.camera(camera))?.ok_or_else(no_such_camera)?;
    app.db(|s| s.snooze(camera, None, clock::now_ms()))?;
    app.alerts_changed();
    Ok(Reply::empty(204))
}

/// Rules name only this node's cameras.
fn check_cameras(app: &App, destination: &Destination) -> Result<(), Error> {
    let Some(wanted) = &destination.rules.cameras else {
        return Ok(());
    };
    let cameras = app.db(|s| s.cameras())?;
    match wanted
        .iter()
        .find(|id| !cameras.iter().any(|c| c.id == **id))
    {
        Some(unknown) => Err(Error::bad_request(format!(
            "rules.cameras names {unknown}, no camera of this node"
        ))),
        None => Ok(()),
    }
}

fn shown_with_secret(destination: &Destination, show: bool) -> Value {
    let mut shown = view(destination);
    if let (true, Target::Webhook { secret, .. }) = (show, &destination.target) {
        shown["secret"] = json!(secret);
    }
    shown
}

fn no_such_destination() -> Error {
    Error::not_found("no such destination")
}
