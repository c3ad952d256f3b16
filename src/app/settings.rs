//! The settings a person changes in the UI (`config::IN_UI`): checked by
//! the settings table's parsers, kept by the store over the environment's,
//! and taken in at once where the node can (the rest at the next start).

use std::sync::Arc;

use crate::clips;
use crate::config::{self, Config, IN_UI, InUi};
use crate::error::Error;
use crate::lock::lock;
use crate::recording;

use super::App;

/// A setting of the UI as the API shows it.
pub struct Shown {
    pub setting: &'static InUi,
    /// The text in use; None for a secret, or when nothing sets it.
    pub text: Option<String>,
    /// Whether anything sets it (a secret's text is never shown).
    pub set: bool,
    /// `ui`, `file` (the environment or the settings file) or `default`.
    pub from: &'static str,
}

impl App {
    pub fn node_name(&self) -> Arc<str> {
        lock(&self.node_name).clone()
    }

    /// Each setting of the UI, in the form's order.
    pub fn settings(&self) -> Result<Vec<Shown>, Error> {
        let stored = self.db(|s| s.settings())?;
        Ok(IN_UI
            .iter()
            .map(|setting| {
                let ui = stored.iter().find(|(n, _)| n == setting.name);
                let file = || {
                    [Some(setting.name), setting.shadows]
                        .into_iter()
                        .flatten()
                        .find_map(|name| (self.env)(name).filter(|t| !t.trim().is_empty()))
                };
                let (text, from) = match ui {
                    Some((_, text)) => (Some(text.clone()), "ui"),
                    None => match file() {
                        Some(text) => (Some(text), "file"),
                        None => (None, "default"),
                    },
                };
                Shown {
                    setting,
                    set: text.is_some(),
                    text: text.filter(|_| !setting.secret),
                    from,
                }
            })
            .collect())
    }

    /// The settings changed in the UI since the node started that it takes
    /// in only when it starts again.
    pub fn restart_needed(&self) -> Result<Vec<&'static str>, Error> {
        let stored = self.db(|s| s.settings())?;
        let text = |list: &[(String, String)], name: &str| {
            list.iter().find(|(n, _)| n == name).map(|(_, t)| t.clone())
        };
        Ok(IN_UI
            .iter()
            .filter(|s| s.restart && text(&stored, s.name) != text(&self.settings_at_start, s.name))
            .map(|s| s.name)
            .collect())
    }

    /// Sets each setting named to its text, or back to the environment's
    /// (None or blank); all or nothing. Each text is checked by its
    /// variable's parser, then the whole configuration they make with the
    /// environment's, as at the next start.
    pub fn change_settings(&self, changes: &[(String, Option<String>)]) -> Result<(), Error> {
        let mut checked = Vec::with_capacity(changes.len());
        for (name, text) in changes {
            let text = text.as_deref().filter(|t| !t.trim().is_empty());
            let setting = config::in_ui(name).map_err(Error::bad_request)?;
            if let Some(text) = text {
                setting.check_text(text).map_err(Error::bad_request)?;
            }
            checked.push((setting.name, text));
        }
        let _changing = lock(&self.changing_settings);
        let mut stored = self.db(|s| s.settings())?;
        let broker_before = broker(&stored, &*self.env);
        for (name, text) in &checked {
            stored.retain(|(n, _)| n != name);
            if let Some(text) = text {
                stored.push(((*name).to_owned(), (*text).to_owned()));
            }
        }
        let config =
            Config::from_vars(&config::overlay(&stored, &*self.env)).map_err(Error::bad_request)?;
        // As a camera's: a password goes to another broker only when the
        // person gives it again with it.
        let has_password = config.mqtt.as_ref().is_some_and(|m| m.password.is_some());
        if has_password
            && broker(&stored, &*self.env) != broker_before
            && !checked.iter().any(|(n, _)| *n == "MQTT_PASSWORD")
        {
            return Err(Error::bad_request(
                "MQTT_PASSWORD must be given again to be sent to another broker",
            ));
        }
        self.db(|s| s.set_settings(&checked))?;
        self.take_in(&config);
        log::info!(
            "settings changed in the UI: {}",
            checked
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        );
        Ok(())
    }

    /// What the node can take in while it runs.
    fn take_in(&self, config: &Config) {
        *lock(&self.node_name) = config.node_name.as_str().into();
        self.clips.set_limits(clips::Limits::from_config(config));
        self.recordings
            .set_limits(recording::Limits::from_config(config));
        self.live_changed();
    }
}

/// The MQTT broker the settings name, (TLS, host, port), if any.
fn broker(
    stored: &[(String, String)],
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<(bool, String, u16)> {
    let url = config::overlay(stored, env)("MQTT_URL")?;
    crate::mqtt::config::parse_url(&url).ok()
}
