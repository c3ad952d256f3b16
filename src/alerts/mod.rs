//! Alerts: telling a person at once, on their phone, what a camera saw.
//! Destinations (`destination`) are a browser's push subscription (Web
//! Push, `webpush`), an ntfy topic or a webhook, each with its rules
//! (`rules`: which events, a cooldown, an update at the end); messages
//! (`message`) are sent by `send`, only to hosts `address` lets through.
//! The thread that turns events into alerts and the outbox's deliveries
//! are `alerting`'s; the outbox itself is the database's.

pub mod address;
pub mod destination;
pub mod message;
pub mod pictures;
pub mod rules;
pub mod send;
pub mod webpush;
