//! `/api/settings`: the node's settings a person may change in the UI
//! (its name, how long events and footage are kept, Home Assistant), as
//! texts in the settings file's syntax. A secret is never shown.

use serde_json::{Value, json};

use crate::app::App;
use crate::error::Error;
use crate::json_body::object;
use crate::web::reply::Reply;

/// `GET /api/settings`.
pub fn get(app: &App) -> Result<Reply, Error> {
    let settings: Vec<Value> = app
        .settings()?
        .iter()
        .map(|shown| {
            let s = shown.setting;
            let mut view = json!({
                "name": s.name,
                "help": s.help,
                "default": s.default,
                "from": shown.from,
                "restart": s.restart,
            });
            if s.secret {
                view["secret"] = json!(true);
                view["set"] = json!(shown.set);
            } else {
                view["value"] = json!(shown.text);
            }
            view
        })
        .collect();
    Ok(Reply::json(
        200,
        &json!({ "settings": settings, "restartNeeded": app.restart_needed()? }),
    ))
}

/// `PATCH /api/settings`: `{"NAME": "text" | number | null, ...}`; null or
/// a blank text gives the setting back to the settings file.
pub fn update(app: &App, body: &[u8]) -> Result<Reply, Error> {
    let changes = object(body)?
        .into_iter()
        .map(|(name, value)| {
            let text = match value {
                Value::Null => None,
                Value::String(text) => Some(text),
                Value::Number(n) => Some(n.to_string()),
                _ => {
                    return Err(Error::bad_request(format!(
                        "{name} must be a text, a number or null"
                    )));
                }
            };
            Ok((name, text))
        })
        .collect::<Result<Vec<_>, Error>>()?;
    app.change_settings(&changes)?;
    get(app)
}
