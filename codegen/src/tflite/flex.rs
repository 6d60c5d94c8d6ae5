//! A custom op's options: the FlexBuffer map TFLM's custom ops (`TFLite_Detection_PostProcess`,
//! `CIRCULAR_BUFFER`, the signal library's) read their parameters from. Every value is looked
//! up by key and checked for its type, and every offset, width and length is checked against
//! the buffer before it is followed: a malformed buffer is an error naming the key, never a
//! panic (the `flexbuffers` crate's reader indexes its buffer unchecked on some malformed
//! offsets, so Kiln reads the format itself; the crate writes the test buffers).
//!
//! The format: the buffer ends with the root value, its packed type and its byte width. A
//! packed type holds the type in its upper six bits and a byte width (1, 2, 4, 8) in its lower
//! two. Offsets count back from where they are stored. A map's values follow its address,
//! their packed types after them; before it lie its length, its keys' byte width and the offset
//! of its keys vector, whose elements are offsets of null-terminated strings.

use super::error::OpError;

/// The FlexBuffer types Kiln reads.
mod kind {
    pub const NULL: u8 = 0;
    pub const INT: u8 = 1;
    pub const UINT: u8 = 2;
    pub const FLOAT: u8 = 3;
    pub const INDIRECT_INT: u8 = 6;
    pub const INDIRECT_UINT: u8 = 7;
    pub const INDIRECT_FLOAT: u8 = 8;
    pub const MAP: u8 = 9;
    pub const BOOL: u8 = 26;
}

/// The options of one custom op.
pub struct CustomOptions<'a> {
    bytes: &'a [u8],
    map: Option<Map>,
}

/// A map: where its values start, their byte width, its length, and its keys vector.
#[derive(Clone, Copy)]
struct Map {
    values: usize,
    width: usize,
    len: usize,
    keys: usize,
    key_width: usize,
}

/// One value: its type, and where and in how many bytes it lies (indirect ones followed).
#[derive(Clone, Copy)]
struct Value {
    kind: u8,
    at: usize,
    width: usize,
}

fn malformed(key: &str, why: &str) -> OpError {
    OpError::Invalid(format!(
        "custom option {key:?}: malformed FlexBuffer: {why}"
    ))
}

/// The unsigned integer of `width` bytes at `at`, if the buffer holds it.
fn uint(bytes: &[u8], at: usize, width: usize) -> Option<u64> {
    let b = bytes.get(at..at.checked_add(width)?)?;
    let mut v = [0u8; 8];
    v.get_mut(..width)?.copy_from_slice(b);
    Some(u64::from_le_bytes(v))
}

/// The address an offset stored at `at` (of `width` bytes) points back to.
fn back(bytes: &[u8], at: usize, width: usize) -> Option<usize> {
    at.checked_sub(usize::try_from(uint(bytes, at, width)?).ok()?)
}

/// A packed type's byte width.
fn width_of(packed: u8) -> usize {
    1 << (packed & 3)
}

impl<'a> CustomOptions<'a> {
    /// Reads `bytes` (no options at all when empty).
    pub fn parse(bytes: &'a [u8]) -> Result<Self, OpError> {
        if bytes.is_empty() {
            return Ok(CustomOptions { bytes, map: None });
        }
        let map = Self::root(bytes).ok_or_else(|| malformed("(root)", "not a map"))?;
        Ok(CustomOptions {
            bytes,
            map: Some(map),
        })
    }

    fn root(bytes: &[u8]) -> Option<Map> {
        let n = bytes.len();
        let root_width = usize::from(*bytes.get(n.checked_sub(1)?)?);
        let packed = *bytes.get(n.checked_sub(2)?)?;
        if packed >> 2 != kind::MAP || !matches!(root_width, 1 | 2 | 4 | 8) {
            return None;
        }
        let at = n.checked_sub(2 + root_width)?;
        let values = back(bytes, at, root_width)?;
        let width = width_of(packed);
        let len = usize::try_from(uint(bytes, values.checked_sub(width)?, width)?).ok()?;
        let keys = back(bytes, values.checked_sub(3 * width)?, width)?;
        let key_width =
            usize::try_from(uint(bytes, values.checked_sub(2 * width)?, width)?).ok()?;
        let types_end = values
            .checked_add(len.checked_mul(width)?)?
            .checked_add(len)?;
        let keys_end = keys.checked_add(len.checked_mul(key_width)?)?;
        let fits = types_end <= n && keys_end <= n && matches!(key_width, 1 | 2 | 4 | 8);
        fits.then_some(Map {
            values,
            width,
            len,
            keys,
            key_width,
        })
    }

    /// The key at position `i` of the map.
    fn key(&self, map: &Map, i: usize) -> Option<&'a [u8]> {
        let at = back(self.bytes, map.keys + i * map.key_width, map.key_width)?;
        let rest = self.bytes.get(at..)?;
        rest.iter().position(|&b| b == 0).map(|end| &rest[..end])
    }

    /// The value of `key`, if the map has it.
    fn get(&self, key: &str) -> Result<Option<Value>, OpError> {
        let Some(map) = self.map else {
            return Ok(None);
        };
        let bad = |why: &str| malformed(key, why);
        for i in 0..map.len {
            if self
                .key(&map, i)
                .ok_or_else(|| bad("a key lies outside it"))?
                != key.as_bytes()
            {
                continue;
            }
            let packed = self.bytes[map.values + map.len * map.width + i];
            let at = map.values + i * map.width;
            let kind = packed >> 2;
            return Ok(match kind {
                kind::NULL => None,
                kind::INDIRECT_INT | kind::INDIRECT_UINT | kind::INDIRECT_FLOAT => {
                    let target = back(self.bytes, at, map.width)
                        .filter(|&t| t + width_of(packed) <= self.bytes.len())
                        .ok_or_else(|| bad("an indirect value lies outside it"))?;
                    Some(Value {
                        kind: kind - (kind::INDIRECT_INT - kind::INT),
                        at: target,
                        width: width_of(packed),
                    })
                }
                _ => Some(Value {
                    kind,
                    at,
                    width: map.width,
                }),
            });
        }
        Ok(None)
    }

    /// An integer (a boolean as 0 or 1, a float truncated).
    pub fn int(&self, key: &str) -> Result<Option<i64>, OpError> {
        let Some(v) = self.get(key)? else {
            return Ok(None);
        };
        let raw = uint(self.bytes, v.at, v.width).ok_or_else(|| malformed(key, "truncated"))?;
        let shift = 64 - 8 * v.width as u32;
        match v.kind {
            kind::INT => Ok(Some(((raw << shift) as i64) >> shift)),
            kind::UINT | kind::BOOL => Ok(Some(i64::try_from(raw).unwrap_or(i64::MAX))),
            // As TFLM's `AsInt64` reads a float: truncated.
            kind::FLOAT => Ok(self.float(key)?.map(|f| f as i64)),
            other => Err(malformed(
                key,
                &format!("type {other} where an integer belongs"),
            )),
        }
    }

    /// A float (an integer is widened).
    pub fn float(&self, key: &str) -> Result<Option<f64>, OpError> {
        let Some(v) = self.get(key)? else {
            return Ok(None);
        };
        if v.kind != kind::FLOAT {
            return Ok(self.int(key)?.map(|i| i as f64));
        }
        let raw = uint(self.bytes, v.at, v.width).ok_or_else(|| malformed(key, "truncated"))?;
        match v.width {
            4 => Ok(Some(f64::from(f32::from_bits(raw as u32)))),
            8 => Ok(Some(f64::from_bits(raw))),
            w => Err(malformed(key, &format!("a float of {w} bytes"))),
        }
    }

    /// A boolean (an integer is true when not zero).
    pub fn bool(&self, key: &str) -> Result<Option<bool>, OpError> {
        Ok(self.int(key)?.map(|v| v != 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn options() -> Vec<u8> {
        let mut b = flexbuffers::Builder::default();
        let mut m = b.start_map();
        m.push("max_detections", 10i32);
        m.push("nms_iou_threshold", 0.5f32);
        m.push("use_regular_nms", true);
        m.push("offset", -300i32);
        m.push("gain", 2.25f64);
        let mut v = m.start_vector("sizes");
        v.push(3i32);
        v.push(-4i32);
        v.end_vector();
        m.end_map();
        b.view().to_vec()
    }

    #[test]
    fn values_are_read_by_key_and_type() {
        let bytes = options();
        let o = CustomOptions::parse(&bytes).unwrap();
        assert_eq!(o.int("max_detections").unwrap(), Some(10));
        assert_eq!(o.float("nms_iou_threshold").unwrap(), Some(0.5));
        assert_eq!(o.float("max_detections").unwrap(), Some(10.0));
        assert_eq!(o.bool("use_regular_nms").unwrap(), Some(true));
        assert_eq!(o.int("offset").unwrap(), Some(-300));
        assert_eq!(o.float("gain").unwrap(), Some(2.25));
        assert_eq!(o.int("absent").unwrap(), None);
        let e = o.int("sizes").unwrap_err();
        assert!(e.to_string().contains("sizes"), "{e}");
        assert_eq!(o.int("nms_iou_threshold").unwrap(), Some(0));
        let none = CustomOptions::parse(&[]).unwrap();
        assert_eq!(none.int("max_detections").unwrap(), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Any byte of the options changed: values or errors, never a panic.
        #[test]
        fn corruption_never_panics(at in 0usize..160, value in any::<u8>()) {
            let mut bytes = options();
            let at = at % bytes.len();
            bytes[at] = value;
            if let Ok(o) = CustomOptions::parse(&bytes) {
                for key in ["max_detections", "nms_iou_threshold", "use_regular_nms", "sizes",
                            "offset", "gain"] {
                    let _ = o.int(key);
                    let _ = o.float(key);
                    let _ = o.bool(key);
                }
            }
        }
    }
}
