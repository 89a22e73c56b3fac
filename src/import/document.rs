//! A config's text as one JSON value, JSON and YAML alike, with the limits and checks both
//! readers lack.
//!
//! - **Duplicate keys.** serde_json and serde_norway keep the last of two equal keys without a
//!   word, so `"maxAttempts": 2, "maxAttempts": 5` would simulate 5 while a reader of the file
//!   sees 2 (and TOML scenarios already refuse a duplicate). The values are built by
//!   [`Node`], which refuses a key its mapping already has, where the second one is read.
//! - **Size and depth of YAML** ([`super::yaml_limits`]): checked on the parser's events before
//!   any value is built.
//!
//! The file itself is read by [`crate::base::text_file`], at most [`super::MAX_CONFIG_BYTES`]. A
//! parser's message is escaped as user text: serde_norway's names the path of keys as written.

use std::fmt;

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, Error, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::{ImportError, yaml_limits};
use crate::base::escape::user_text;

/// Reads `text` as YAML (`yaml`) or JSON into one value.
pub fn parse(text: &str, yaml: bool) -> Result<Value, ImportError> {
    let error = |field: String, message: String| ImportError {
        file: String::new(),
        field,
        message,
    };
    if yaml {
        yaml_limits::check(text).map_err(|refusal| {
            error(
                format!("line {}, column {}", refusal.line, refusal.column),
                refusal.message,
            )
        })?;
        Node.deserialize(serde_norway::Deserializer::from_str(text))
            .map_err(|e| {
                let field = e
                    .location()
                    .map(|at| format!("line {}, column {}", at.line(), at.column()))
                    .unwrap_or_default();
                error(
                    field,
                    format!("not valid YAML: {}", user_text(&e.to_string())),
                )
            })
    } else {
        let mut reader = serde_json::Deserializer::from_str(text);
        let value = Node.deserialize(&mut reader).and_then(|value| {
            reader.end()?;
            Ok(value)
        });
        value.map_err(|e| {
            error(
                format!("line {}, column {}", e.line(), e.column()),
                format!("not valid JSON: {}", user_text(&e.to_string())),
            )
        })
    }
}

/// A value of any kind, built as `serde_json::Value` builds itself; a mapping refuses a key it
/// already has.
struct Node;

impl<'de> DeserializeSeed<'de> for Node {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a config value")
    }

    fn visit_bool<E: Error>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E: Error>(self, value: i64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_u64<E: Error>(self, value: u64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_i128<E: Error>(self, value: i128) -> Result<Value, E> {
        Number::deserialize(serde::de::value::I128Deserializer::new(value)).map(Value::Number)
    }

    fn visit_u128<E: Error>(self, value: u128) -> Result<Value, E> {
        Number::deserialize(serde::de::value::U128Deserializer::new(value)).map(Value::Number)
    }

    fn visit_f64<E: Error>(self, value: f64) -> Result<Value, E> {
        Ok(Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: Error>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_string()))
    }

    fn visit_string<E: Error>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E: Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Node)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key_seed(Key(&object))? {
            let value = map.next_value_seed(Node)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// A mapping's key, refused if the mapping has it already.
struct Key<'a>(&'a Map<String, Value>);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: Error>(self, key: &str) -> Result<String, E> {
        if self.0.contains_key(key) {
            return Err(E::custom(format!(
                "duplicate key {key:?}: a key may appear once in a mapping (readers differ on which of two wins)"
            )));
        }
        Ok(key.to_string())
    }
}
