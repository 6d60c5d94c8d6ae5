//! The little the benchmark reads from a peer's 32-bit little-endian ELF image: the address of
//! its marker word, and its flash counted as a Kiln image's is (every loaded section with
//! contents), less named arrays that a deployed image would not hold.

use anyhow::{bail, Context, Result};

const SHT_PROGBITS: u32 = 1;
const SHT_SYMTAB: u32 = 2;
const SHF_ALLOC: u32 = 2;

/// A parsed image: each section's type, flags and size, and the symbols (name, address, size).
#[derive(Debug, Default, PartialEq)]
pub struct Image {
    sections: Vec<(u32, u32, u32)>,
    symbols: Vec<(String, u32, u32)>,
}

impl Image {
    /// Reads an image's section headers and symbol table.
    pub fn parse(bytes: &[u8]) -> Result<Image> {
        if bytes.get(..6) != Some(b"\x7fELF\x01\x01") {
            bail!("not a 32-bit little-endian ELF image");
        }
        let (shoff, entsize) = (word(bytes, 0x20)? as usize, half(bytes, 0x2e)? as usize);
        let count = half(bytes, 0x30)? as usize;
        let headers: Vec<[u32; 10]> = (0..count)
            .map(|i| {
                let at = shoff + i * entsize;
                let mut h = [0u32; 10];
                for (k, field) in h.iter_mut().enumerate() {
                    *field = word(bytes, at + 4 * k)?;
                }
                Ok(h)
            })
            .collect::<Result<_>>()?;
        let data = |h: &[u32; 10]| {
            let (at, size) = (h[4] as usize, h[5] as usize);
            bytes
                .get(at..at + size)
                .context("a section's data is past the end")
        };
        let mut symbols = Vec::new();
        for h in headers.iter().filter(|h| h[1] == SHT_SYMTAB) {
            let names = headers.get(h[6] as usize).map(data).transpose()?;
            for entry in data(h)?.chunks_exact(16) {
                let name = c_string(names.unwrap_or(&[]), word(entry, 0)? as usize);
                symbols.push((name, word(entry, 4)?, word(entry, 8)?));
            }
        }
        let sections = headers.iter().map(|h| (h[1], h[2], h[5])).collect();
        Ok(Image { sections, symbols })
    }

    /// Address and size of the symbol named `name`.
    pub fn symbol(&self, name: &str) -> Option<(u32, u32)> {
        let (_, address, size) = self.symbols.iter().find(|(n, _, _)| n == name)?;
        Some((*address, *size))
    }

    /// Bytes in flash as a Kiln image's are counted (every loaded section with contents: code,
    /// read-only data, the initial values of `.data`), less the symbols named in `without`.
    pub fn flash_without(&self, without: &[&str]) -> usize {
        let loaded: u32 = (self.sections.iter())
            .filter(|(kind, flags, _)| *kind == SHT_PROGBITS && flags & SHF_ALLOC != 0)
            .map(|(_, _, size)| size)
            .sum();
        let left_out: u32 = without
            .iter()
            .filter_map(|n| self.symbol(n))
            .map(|s| s.1)
            .sum();
        loaded.saturating_sub(left_out) as usize
    }
}

fn word(bytes: &[u8], at: usize) -> Result<u32> {
    let b = bytes.get(at..at + 4).context("the image is cut short")?;
    Ok(u32::from_le_bytes(b.try_into().expect("four bytes")))
}

fn half(bytes: &[u8], at: usize) -> Result<u16> {
    let b = bytes.get(at..at + 2).context("the image is cut short")?;
    Ok(u16::from_le_bytes(b.try_into().expect("two bytes")))
}

/// The NUL-terminated string at `at` of a string table.
fn c_string(table: &[u8], at: usize) -> String {
    let rest = table.get(at..).unwrap_or(&[]);
    let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    String::from_utf8_lossy(&rest[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal image: a null section, `.text` (PROGBITS, ALLOC, 100 B), `.bss` (NOBITS,
    /// 50 B), a symbol table with `g_inputs` (30 B at 0x40) and its string table.
    fn image() -> Vec<u8> {
        let strings = b"\0g_inputs\0".to_vec();
        let mut symtab = vec![0u8; 16];
        for w in [1u32, 0x40, 30, 0] {
            symtab.extend(w.to_le_bytes());
        }
        let data_at = 52u32;
        let strings_at = data_at + symtab.len() as u32;
        let shoff = strings_at + strings.len() as u32;
        let mut b = vec![0u8; 52];
        b[..6].copy_from_slice(b"\x7fELF\x01\x01");
        b[0x20..0x24].copy_from_slice(&shoff.to_le_bytes());
        b[0x2e..0x30].copy_from_slice(&40u16.to_le_bytes());
        b[0x30..0x32].copy_from_slice(&5u16.to_le_bytes());
        b.extend(&symtab);
        b.extend(&strings);
        let sections: [[u32; 10]; 5] = [
            [0; 10],
            [0, SHT_PROGBITS, SHF_ALLOC | 4, 0, 0, 100, 0, 0, 4, 0],
            [0, 8, SHF_ALLOC | 1, 0, 0, 50, 0, 0, 4, 0],
            [0, SHT_SYMTAB, 0, 0, data_at, 32, 4, 1, 4, 16],
            [0, 3, 0, 0, strings_at, strings.len() as u32, 0, 0, 1, 0],
        ];
        for h in sections.iter().flatten() {
            b.extend(h.to_le_bytes());
        }
        b
    }

    #[test]
    fn reads_the_loaded_sections_and_the_symbols() {
        let elf = Image::parse(&image()).unwrap();
        assert_eq!(elf.symbol("g_inputs"), Some((0x40, 30)));
        assert_eq!(elf.symbol("g_model"), None);
        assert_eq!(elf.flash_without(&[]), 100);
        assert_eq!(elf.flash_without(&["g_inputs", "g_expected"]), 70);
        let err = Image::parse(b"\x7fELF\x02\x01").unwrap_err();
        assert!(err.to_string().contains("32-bit"), "{err}");
        assert!(Image::parse(&image()[..60]).is_err());
    }
}
