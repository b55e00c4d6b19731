//! Building a platform's JSON payloads without copying them. `serde_json::json!`
//! takes each interpolated expression by reference and serializes it into a new value,
//! so a card's nested blocks, interpolated level by level, were copied once per level:
//! for a Teams card that was most of the cost of rendering it.

use serde_json::Value;

/// `value` with `items` moved in at `key`. Write the key in `value` with a `null`
/// placeholder: replacing it keeps the key's place (the maps keep their order), so
/// the payload reads exactly as if `json!` had built it.
pub fn put(mut value: Value, key: &str, items: impl Into<Value>) -> Value {
    value[key] = items.into();
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_moved_value_takes_the_placeholders_place() {
        let blocks = vec![json!({ "type": "section" }), json!({ "type": "actions" })];
        let built = put(json!({ "text": "t", "blocks": null, "after": 1 }), "blocks", blocks.clone());
        assert_eq!(built.to_string(), json!({ "text": "t", "blocks": blocks, "after": 1 }).to_string());
    }
}
