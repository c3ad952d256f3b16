//! A request's JSON body and its fields, read the same way by every handler:
//! an object, fields that may be absent (null counts as absent), and errors
//! that name the field.

use serde_json::{Map, Value};

use crate::error::Error;

/// The body's JSON object.
pub fn object(body: &[u8]) -> Result<Map<String, Value>, Error> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| Error::bad_request(format!("body is not valid JSON: {e}")))?;
    match value {
        Value::Object(fields) => Ok(fields),
        _ => Err(Error::bad_request("body must be a JSON object")),
    }
}

/// A field that may be absent; JSON null counts as absent.
pub fn field<'a>(fields: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    fields.get(name).filter(|v| !v.is_null())
}

pub fn optional_str<'a>(
    fields: &'a Map<String, Value>,
    name: &str,
) -> Result<Option<&'a str>, Error> {
    match field(fields, name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(Error::bad_request(format!("{name} must be a string"))),
    }
}

pub fn optional_bool(fields: &Map<String, Value>, name: &str) -> Result<Option<bool>, Error> {
    match field(fields, name) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(Error::bad_request(format!("{name} must be true or false"))),
    }
}
