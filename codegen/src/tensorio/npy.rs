//! The NumPy `.npy` format: versions 1 to 3, little-endian, C order.
//!
//! A file is the magic `\x93NUMPY`, a version, a header length, a header that is a Python dict
//! literal (`{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`), then the data.

use crate::dtype::Scalar;
use crate::tensor::{Tensor, TensorError};

const MAGIC: &[u8] = b"\x93NUMPY";

/// Decodes a whole `.npy` file; the error is the reason it is refused.
pub(super) fn decode(bytes: &[u8]) -> Result<Tensor, String> {
    let rest = bytes.strip_prefix(MAGIC).ok_or("no .npy magic")?;
    let (len_size, utf8) = match rest.first() {
        Some(1) => (2, false),
        Some(2) => (4, false),
        Some(3) => (4, true),
        Some(v) => return Err(format!("unknown version {v}")),
        None => return Err("truncated".to_string()),
    };
    let rest = rest.get(2..).ok_or("truncated")?;
    let len_bytes = rest.get(..len_size).ok_or("truncated")?;
    let header_len = len_bytes
        .iter()
        .rev()
        .fold(0usize, |n, &b| n << 8 | usize::from(b));
    let rest = &rest[len_size..];
    let header = rest.get(..header_len).ok_or("truncated header")?;
    let header = match utf8 {
        true => std::str::from_utf8(header)
            .map_err(|_| "header is not UTF-8")?
            .to_string(),
        false => header.iter().map(|&b| char::from(b)).collect(),
    };
    let (dtype, dims) = read_header(&header)?;
    let data = &rest[header_len..];
    Tensor::new(dtype, dims, data.to_vec()).map_err(|e| match e {
        TensorError::ByteLength {
            shape, got, want, ..
        } => format!("{got} data bytes, shape {shape:?} needs {want}"),
        _ => "shape is too large".to_string(),
    })
}

/// Encodes a tensor as a version 1 file (version 2 if the header needs it), padded as NumPy
/// pads it so the data starts on a 64-byte boundary.
/// `None` when the header is too long for the format.
pub(super) fn encode(t: &Tensor) -> Option<Vec<u8>> {
    let descr = descr(t.dtype());
    let shape = match t.shape() {
        [d] => format!("({d},)"),
        dims => format!(
            "({})",
            dims.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let v1 = header.len() + 64 <= usize::from(u16::MAX);
    let prefix = if v1 { 10 } else { 12 };
    let padding = (64 - (prefix + header.len() + 1) % 64) % 64;
    header.extend(std::iter::repeat_n(' ', padding));
    header.push('\n');
    let mut out = MAGIC.to_vec();
    if v1 {
        out.extend([1, 0]);
        out.extend((header.len() as u16).to_le_bytes());
    } else {
        out.extend([2, 0]);
        out.extend(u32::try_from(header.len()).ok()?.to_le_bytes());
    }
    out.extend(header.as_bytes());
    out.extend(t.bytes());
    Some(out)
}

fn descr(dtype: Scalar) -> &'static str {
    match dtype {
        Scalar::F32 => "<f4",
        Scalar::F64 => "<f8",
        Scalar::F16 => "<f2",
        Scalar::I8 => "|i1",
        Scalar::U8 => "|u1",
        Scalar::I16 => "<i2",
        Scalar::U16 => "<u2",
        Scalar::I32 => "<i4",
        Scalar::U32 => "<u4",
        Scalar::I64 => "<i8",
        Scalar::U64 => "<u8",
        Scalar::Bool => "|b1",
    }
}

fn dtype_of(descr: &str) -> Result<Scalar, String> {
    let (order, code) = descr.split_at_checked(1).ok_or("empty descr")?;
    let dtype = match code {
        "f4" => Scalar::F32,
        "f8" => Scalar::F64,
        "f2" => Scalar::F16,
        "i1" => Scalar::I8,
        "u1" => Scalar::U8,
        "i2" => Scalar::I16,
        "u2" => Scalar::U16,
        "i4" => Scalar::I32,
        "u4" => Scalar::U32,
        "i8" => Scalar::I64,
        "u8" => Scalar::U64,
        "b1" => Scalar::Bool,
        _ => return Err(format!("unsupported dtype {descr:?}")),
    };
    match order {
        "<" | "|" => Ok(dtype),
        _ if dtype.size() == 1 => Ok(dtype),
        ">" => Err(format!("big-endian dtype {descr:?}")),
        _ => Err(format!("dtype {descr:?} has no little-endian byte order")),
    }
}

/// Reads `descr`, `fortran_order` and `shape` from the header dict.
fn read_header(header: &str) -> Result<(Scalar, Vec<usize>), String> {
    let mut p = Literal {
        s: header.trim_end().as_bytes(),
        pos: 0,
    };
    let (mut dtype, mut fortran, mut dims) = (None, None, None);
    p.expect(b'{')?;
    while !p.eat(b'}') {
        let key = p.string()?;
        p.expect(b':')?;
        match key.as_str() {
            "descr" => dtype = Some(dtype_of(&p.string()?)?),
            "fortran_order" => fortran = Some(p.boolean()?),
            "shape" => dims = Some(p.tuple()?),
            _ => return Err(format!("unexpected header key {key:?}")),
        }
        if !p.eat(b',') {
            p.expect(b'}')?;
            break;
        }
    }
    if fortran.ok_or("header lacks 'fortran_order'")? {
        return Err("Fortran order is not supported (save in C order)".to_string());
    }
    Ok((
        dtype.ok_or("header lacks 'descr'")?,
        dims.ok_or("header lacks 'shape'")?,
    ))
}

/// A cursor over the small Python literal subset `.npy` headers use.
struct Literal<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Literal<'_> {
    fn skip_space(&mut self) {
        while self.s.get(self.pos).is_some_and(u8::is_ascii_whitespace) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_space();
        let found = self.s.get(self.pos) == Some(&c);
        self.pos += usize::from(found);
        found
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        match self.eat(c) {
            true => Ok(()),
            false => Err(format!(
                "header: expected {:?} at byte {}",
                char::from(c),
                self.pos
            )),
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.skip_space();
        let quote = *self.s.get(self.pos).ok_or("header: unexpected end")?;
        if quote != b'\'' && quote != b'"' {
            return Err(format!("header: expected a string at byte {}", self.pos));
        }
        let start = self.pos + 1;
        let len = self.s[start..]
            .iter()
            .position(|&c| c == quote)
            .ok_or("unclosed string")?;
        self.pos = start + len + 1;
        Ok(String::from_utf8_lossy(&self.s[start..start + len]).into_owned())
    }

    fn word(&mut self) -> &[u8] {
        self.skip_space();
        let start = self.pos;
        while self.s.get(self.pos).is_some_and(u8::is_ascii_alphanumeric) {
            self.pos += 1;
        }
        &self.s[start..self.pos]
    }

    fn boolean(&mut self) -> Result<bool, String> {
        match self.word() {
            b"True" => Ok(true),
            b"False" => Ok(false),
            _ => Err("header: expected True or False".to_string()),
        }
    }

    fn tuple(&mut self) -> Result<Vec<usize>, String> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        while !self.eat(b')') {
            let word = std::str::from_utf8(self.word()).unwrap_or_default();
            let dim = word
                .parse()
                .map_err(|_| format!("header: bad dimension {word:?}"))?;
            dims.push(dim);
            if !self.eat(b',') {
                self.expect(b')')?;
                break;
            }
        }
        Ok(dims)
    }
}
