//! The little a board run needs from a 32-bit little-endian ELF image (every board's): its
//! sections' sizes and flags, and the address and size of a symbol.

/// A section header's fields this module uses.
#[derive(Clone, Debug)]
pub struct Section {
    pub name: String,
    pub kind: u32,
    pub flags: u32,
    pub size: usize,
}

const SHT_PROGBITS: u32 = 1;
const SHT_SYMTAB: u32 = 2;
const SHF_WRITE: u32 = 1;
const SHF_ALLOC: u32 = 2;

/// A parsed image: its sections, and its symbol table as (name, address, size).
#[derive(Debug)]
pub struct Elf {
    pub sections: Vec<Section>,
    symbols: Vec<(String, u32, u32)>,
}

impl Elf {
    pub fn parse(bytes: &[u8]) -> Result<Elf, String> {
        if bytes.get(..4) != Some(b"\x7fELF") {
            return Err("no ELF magic".into());
        }
        if bytes.get(4..6) != Some(&[1, 1]) {
            return Err("not a 32-bit little-endian image".into());
        }
        let shoff = u32_at(bytes, 0x20)? as usize;
        let shentsize = u16_at(bytes, 0x2e)? as usize;
        let shnum = u16_at(bytes, 0x30)? as usize;
        let shstrndx = u16_at(bytes, 0x32)? as usize;
        let header = |i: usize| -> Result<&[u8], String> {
            let start = shoff + i * shentsize;
            bytes
                .get(start..start + 40)
                .ok_or_else(|| format!("section header {i} is past the end"))
        };
        let raw: Vec<[u32; 10]> = (0..shnum)
            .map(|i| {
                let h = header(i)?;
                let mut fields = [0u32; 10];
                for (k, field) in fields.iter_mut().enumerate() {
                    *field = u32_at(h, 4 * k)?;
                }
                Ok(fields)
            })
            .collect::<Result<_, String>>()?;
        let data = |h: &[u32; 10]| -> Result<&[u8], String> {
            let (offset, size) = (h[4] as usize, h[5] as usize);
            bytes
                .get(offset..offset + size)
                .ok_or_else(|| "a section's data is past the end".to_string())
        };
        let names = raw.get(shstrndx).map(data).transpose()?.unwrap_or(&[]);
        let sections = raw
            .iter()
            .map(|h| Section {
                name: c_string(names, h[0] as usize),
                kind: h[1],
                flags: h[2],
                size: h[5] as usize,
            })
            .collect();
        let mut symbols = Vec::new();
        for h in raw.iter().filter(|h| h[1] == SHT_SYMTAB) {
            let strings = raw.get(h[6] as usize).map(data).transpose()?.unwrap_or(&[]);
            for entry in data(h)?.chunks_exact(16) {
                let name = c_string(strings, u32_at(entry, 0)? as usize);
                symbols.push((name, u32_at(entry, 4)?, u32_at(entry, 8)?));
            }
        }
        Ok(Elf { sections, symbols })
    }

    /// Address and size of the first symbol named `name`.
    pub fn symbol(&self, name: &str) -> Option<(u32, u32)> {
        self.symbols
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|&(_, address, size)| (address, size))
    }

    /// Size of the first symbol whose (mangled) name ends with `suffix`.
    pub fn symbol_size_ending(&self, suffix: &str) -> Option<u32> {
        self.symbols
            .iter()
            .find(|(n, _, _)| n.ends_with(suffix))
            .map(|&(_, _, size)| size)
    }

    /// Bytes the image puts in flash: every loaded section with contents (`.data` too, whose
    /// initial values are copied from flash).
    pub fn flash_bytes(&self) -> usize {
        self.sections
            .iter()
            .filter(|s| s.kind == SHT_PROGBITS && s.flags & SHF_ALLOC != 0)
            .map(|s| s.size)
            .sum()
    }

    /// Bytes of static RAM: every loaded writable section, but the stack and heap some runtimes
    /// reserve as sections (they are what remains, not statics).
    pub fn ram_bytes(&self) -> usize {
        self.sections
            .iter()
            .filter(|s| s.flags & (SHF_ALLOC | SHF_WRITE) == SHF_ALLOC | SHF_WRITE)
            .filter(|s| s.name != ".stack" && s.name != ".heap")
            .map(|s| s.size)
            .sum()
    }
}

fn u32_at(bytes: &[u8], at: usize) -> Result<u32, String> {
    let word = bytes.get(at..at + 4).ok_or("truncated image")?;
    Ok(u32::from_le_bytes(word.try_into().expect("four bytes")))
}

fn u16_at(bytes: &[u8], at: usize) -> Result<u16, String> {
    let half = bytes.get(at..at + 2).ok_or("truncated image")?;
    Ok(u16::from_le_bytes(half.try_into().expect("two bytes")))
}

fn c_string(table: &[u8], at: usize) -> String {
    let tail = table.get(at..).unwrap_or(&[]);
    let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
    String::from_utf8_lossy(&tail[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal image: null section, `.text` (8 bytes, AX), `.bss` (16, WA), `.shstrtab`.
    fn image() -> Vec<u8> {
        let names = b"\0.text\0.bss\0.shstrtab\0";
        let shoff = 52 + names.len();
        let mut bytes = vec![0u8; 52];
        bytes[..6].copy_from_slice(b"\x7fELF\x01\x01");
        bytes[0x20..0x24].copy_from_slice(&(shoff as u32).to_le_bytes());
        bytes[0x2e..0x30].copy_from_slice(&40u16.to_le_bytes());
        bytes[0x30..0x32].copy_from_slice(&4u16.to_le_bytes());
        bytes[0x32..0x34].copy_from_slice(&3u16.to_le_bytes());
        bytes.extend_from_slice(names);
        let headers: [[u32; 10]; 4] = [
            [0; 10],
            [1, SHT_PROGBITS, 6, 0, 0, 8, 0, 0, 4, 0],
            [7, 8, 3, 0, 0, 16, 0, 0, 4, 0],
            [12, 3, 0, 0, 52, names.len() as u32, 0, 0, 1, 0],
        ];
        for h in headers {
            bytes.extend(h.iter().flat_map(|w| w.to_le_bytes()));
        }
        bytes
    }

    #[test]
    fn sizes_flash_and_ram() {
        let elf = Elf::parse(&image()).unwrap();
        let names: Vec<_> = elf.sections.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["", ".text", ".bss", ".shstrtab"]);
        assert_eq!((elf.flash_bytes(), elf.ram_bytes()), (8, 16));
        assert_eq!(elf.symbol("main"), None);
    }

    #[test]
    fn refuses_other_files() {
        assert!(Elf::parse(b"#!/bin/sh\n").is_err());
        assert!(Elf::parse(&image()[..60]).is_err());
    }
}
