//! A custom op's options: the FlexBuffer map TFLM's custom ops (`TFLite_Detection_PostProcess`,
//! `CIRCULAR_BUFFER`, the signal library's) read their parameters from, read with the
//! official `flexbuffers` crate. Every value is looked up by key and checked for its type; a
//! malformed buffer is an error naming the key, never a panic.

use super::error::OpError;
use flexbuffers::{FlexBufferType, MapReader, Reader};

/// The options of one custom op.
pub struct CustomOptions<'a> {
    map: Option<MapReader<&'a [u8]>>,
}

fn malformed(key: &str, e: impl std::fmt::Display) -> OpError {
    OpError::Invalid(format!("custom option {key:?}: {e}"))
}

impl<'a> CustomOptions<'a> {
    /// Reads `bytes` (no options at all when empty).
    pub fn parse(bytes: &'a [u8]) -> Result<Self, OpError> {
        if bytes.is_empty() {
            return Ok(CustomOptions { map: None });
        }
        let root = Reader::get_root(bytes).map_err(|e| malformed("(root)", e))?;
        let map = root.get_map().map_err(|e| malformed("(root)", e))?;
        Ok(CustomOptions { map: Some(map) })
    }

    /// The value of `key`, if the map has it.
    fn get(&self, key: &str) -> Result<Option<Reader<&'a [u8]>>, OpError> {
        let Some(map) = &self.map else {
            return Ok(None);
        };
        match map.index(key) {
            Ok(r) if r.flexbuffer_type() == FlexBufferType::Null => Ok(None),
            Ok(r) => Ok(Some(r)),
            Err(flexbuffers::ReaderError::KeyNotFound) => Ok(None),
            Err(e) => Err(malformed(key, e)),
        }
    }

    /// An integer (or a boolean, as 0 or 1).
    pub fn int(&self, key: &str) -> Result<Option<i64>, OpError> {
        let Some(r) = self.get(key)? else {
            return Ok(None);
        };
        match r.flexbuffer_type() {
            FlexBufferType::Bool => r.get_bool().map(i64::from),
            FlexBufferType::UInt | FlexBufferType::IndirectUInt => {
                r.get_u64().map(|v| i64::try_from(v).unwrap_or(i64::MAX))
            }
            _ => r.get_i64(),
        }
        .map(Some)
        .map_err(|e| malformed(key, e))
    }

    /// A float (an integer is widened).
    #[allow(dead_code)] // for the options of the custom ops still to come
    pub fn float(&self, key: &str) -> Result<Option<f64>, OpError> {
        let Some(r) = self.get(key)? else {
            return Ok(None);
        };
        match r.flexbuffer_type() {
            FlexBufferType::Float | FlexBufferType::IndirectFloat => r.get_f64(),
            _ => r.get_i64().map(|v| v as f64),
        }
        .map(Some)
        .map_err(|e| malformed(key, e))
    }

    /// A boolean (an integer is true when not zero).
    #[allow(dead_code)] // for the options of the custom ops still to come
    pub fn bool(&self, key: &str) -> Result<Option<bool>, OpError> {
        Ok(self.int(key)?.map(|v| v != 0))
    }

    /// A vector of integers.
    #[allow(dead_code)] // for the options of the custom ops still to come
    pub fn ints(&self, key: &str) -> Result<Option<Vec<i64>>, OpError> {
        let Some(r) = self.get(key)? else {
            return Ok(None);
        };
        let v = r.get_vector().map_err(|e| malformed(key, e))?;
        (0..v.len())
            .map(|i| {
                v.index(i)
                    .and_then(|x| x.get_i64())
                    .map_err(|e| malformed(key, e))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
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
        assert_eq!(o.ints("sizes").unwrap(), Some(vec![3, -4]));
        assert_eq!(o.int("absent").unwrap(), None);
        let e = o.ints("max_detections").unwrap_err();
        assert!(e.to_string().contains("max_detections"), "{e}");
        let none = CustomOptions::parse(&[]).unwrap();
        assert_eq!(none.int("max_detections").unwrap(), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Any byte of the options changed: values or errors, never a panic.
        #[test]
        fn corruption_never_panics(at in 0usize..64, value in any::<u8>()) {
            let mut bytes = options();
            let at = at % bytes.len();
            bytes[at] = value;
            if let Ok(o) = CustomOptions::parse(&bytes) {
                for key in ["max_detections", "nms_iou_threshold", "use_regular_nms", "sizes"] {
                    let _ = o.int(key);
                    let _ = o.float(key);
                    let _ = o.ints(key);
                }
            }
        }
    }
}
