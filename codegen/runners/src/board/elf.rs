//! The little a board run needs from a little-endian ELF image, 32-bit (every microcontroller
//! board's) or 64-bit (a hosted AArch64 board's): its sections' sizes and flags, and the
//! address and size of a symbol.

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
    symbols: Vec<(String, u64, u64)>,
}

/// The fields of a section header this module reads, whatever the image's class.
struct RawSection {
    name: usize,
    kind: u32,
    flags: u64,
    offset: usize,
    size: usize,
    link: usize,
}

/// Where a class's fields lie: 32-bit images (every microcontroller board's) or 64-bit ones
/// (a hosted AArch64 board's).
struct Class {
    wide: bool,
}

impl Class {
    /// A word of the class's width at `at`: 4 bytes, or 8 in a 64-bit image.
    fn word(&self, bytes: &[u8], at: usize) -> Result<u64, String> {
        match self.wide {
            true => u64_at(bytes, at),
            false => u32_at(bytes, at).map(u64::from),
        }
    }

    fn section(&self, h: &[u8]) -> Result<RawSection, String> {
        let at = |k32: usize, k64: usize| if self.wide { k64 } else { k32 };
        let size = |w: u64| usize::try_from(w).map_err(|_| "a section too large".to_string());
        Ok(RawSection {
            name: u32_at(h, 0)? as usize,
            kind: u32_at(h, 4)?,
            flags: self.word(h, 8)?,
            offset: size(self.word(h, at(16, 24))?)?,
            size: size(self.word(h, at(20, 32))?)?,
            link: u32_at(h, at(24, 40))? as usize,
        })
    }

    /// A symbol's (name offset, address, size).
    fn symbol(&self, entry: &[u8]) -> Result<(usize, u64, u64), String> {
        let name = u32_at(entry, 0)? as usize;
        match self.wide {
            true => Ok((name, u64_at(entry, 8)?, u64_at(entry, 16)?)),
            false => Ok((name, self.word(entry, 4)?, self.word(entry, 8)?)),
        }
    }

    /// The length of one symbol-table entry.
    fn symbol_len(&self) -> usize {
        if self.wide {
            24
        } else {
            16
        }
    }
}

impl Elf {
    pub fn parse(bytes: &[u8]) -> Result<Elf, String> {
        if bytes.get(..4) != Some(b"\x7fELF") {
            return Err("no ELF magic".into());
        }
        let class = match bytes.get(4..6) {
            Some([1, 1]) => Class { wide: false },
            Some([2, 1]) => Class { wide: true },
            _ => return Err("not a little-endian image of 32 or 64 bits".into()),
        };
        let field = |k32: usize, k64: usize| if class.wide { k64 } else { k32 };
        let shoff = class.word(bytes, field(0x20, 0x28))? as usize;
        let shentsize = u16_at(bytes, field(0x2e, 0x3a))? as usize;
        let shnum = u16_at(bytes, field(0x30, 0x3c))? as usize;
        let shstrndx = u16_at(bytes, field(0x32, 0x3e))? as usize;
        let raw: Vec<RawSection> = (0..shnum)
            .map(|i| {
                let start = shoff + i * shentsize;
                let h = bytes
                    .get(start..start + shentsize)
                    .ok_or_else(|| format!("section header {i} is past the end"))?;
                class.section(h)
            })
            .collect::<Result<_, String>>()?;
        let data = |h: &RawSection| -> Result<&[u8], String> {
            bytes
                .get(h.offset..h.offset.saturating_add(h.size))
                .ok_or_else(|| "a section's data is past the end".to_string())
        };
        let names = raw.get(shstrndx).map(data).transpose()?.unwrap_or(&[]);
        let sections = raw
            .iter()
            .map(|h| Section {
                name: c_string(names, h.name),
                kind: h.kind,
                flags: h.flags as u32,
                size: h.size,
            })
            .collect();
        let mut symbols = Vec::new();
        for h in raw.iter().filter(|h| h.kind == SHT_SYMTAB) {
            let strings = raw.get(h.link).map(data).transpose()?.unwrap_or(&[]);
            for entry in data(h)?.chunks_exact(class.symbol_len()) {
                let (name, address, size) = class.symbol(entry)?;
                symbols.push((c_string(strings, name), address, size));
            }
        }
        Ok(Elf { sections, symbols })
    }

    /// Address and size of the first symbol named `name`, where both fit 32 bits (every
    /// symbol of a 32-bit image; in a 64-bit one, those of a program linked at a fixed low
    /// address, as the hosted boards are).
    pub fn symbol(&self, name: &str) -> Option<(u32, u32)> {
        let &(_, address, size) = self.symbols.iter().find(|(n, _, _)| n == name)?;
        Some((u32::try_from(address).ok()?, u32::try_from(size).ok()?))
    }

    /// Size of the first symbol whose (mangled) name ends with `suffix`.
    pub fn symbol_size_ending(&self, suffix: &str) -> Option<u32> {
        self.symbols
            .iter()
            .find(|(n, _, _)| n.ends_with(suffix))
            .and_then(|&(_, _, size)| u32::try_from(size).ok())
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

fn u64_at(bytes: &[u8], at: usize) -> Result<u64, String> {
    let word = bytes.get(at..at + 8).ok_or("truncated image")?;
    Ok(u64::from_le_bytes(word.try_into().expect("eight bytes")))
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

    /// A minimal image of 32 or 64 bits: null section, `.text` (8 bytes, AX), `.bss` (16, WA),
    /// `.shstrtab`.
    fn image_of(wide: bool) -> Vec<u8> {
        let names = b"\0.text\0.bss\0.shstrtab\0";
        let (ehsize, shentsize) = if wide { (64, 64) } else { (52, 40) };
        let shoff = ehsize + names.len();
        let mut bytes = vec![0u8; ehsize];
        bytes[..6].copy_from_slice(if wide {
            b"\x7fELF\x02\x01"
        } else {
            b"\x7fELF\x01\x01"
        });
        let at = if wide { 0x28 } else { 0x20 };
        match wide {
            true => bytes[at..at + 8].copy_from_slice(&(shoff as u64).to_le_bytes()),
            false => bytes[at..at + 4].copy_from_slice(&(shoff as u32).to_le_bytes()),
        }
        let counts_at = if wide { 0x3a } else { 0x2e };
        let counts = [shentsize as u16, 4, 3].map(u16::to_le_bytes).concat();
        bytes[counts_at..counts_at + 6].copy_from_slice(&counts);
        bytes.extend_from_slice(names);
        // name, type, flags, offset, size
        let headers: [[u64; 5]; 4] = [
            [0; 5],
            [1, SHT_PROGBITS as u64, 6, 0, 8],
            [7, 8, 3, 0, 16],
            [12, 3, 0, ehsize as u64, names.len() as u64],
        ];
        for [name, kind, flags, offset, size] in headers {
            let mut h = vec![0u8; shentsize];
            h[0..4].copy_from_slice(&(name as u32).to_le_bytes());
            h[4..8].copy_from_slice(&(kind as u32).to_le_bytes());
            match wide {
                true => {
                    h[8..16].copy_from_slice(&flags.to_le_bytes());
                    h[24..32].copy_from_slice(&offset.to_le_bytes());
                    h[32..40].copy_from_slice(&size.to_le_bytes());
                }
                false => {
                    h[8..12].copy_from_slice(&(flags as u32).to_le_bytes());
                    h[16..20].copy_from_slice(&(offset as u32).to_le_bytes());
                    h[20..24].copy_from_slice(&(size as u32).to_le_bytes());
                }
            }
            bytes.extend(h);
        }
        bytes
    }

    fn image() -> Vec<u8> {
        image_of(false)
    }

    #[test]
    fn sizes_flash_and_ram() {
        for wide in [false, true] {
            let elf = Elf::parse(&image_of(wide)).unwrap();
            let names: Vec<_> = elf.sections.iter().map(|s| s.name.as_str()).collect();
            assert_eq!(names, ["", ".text", ".bss", ".shstrtab"], "64-bit: {wide}");
            assert_eq!((elf.flash_bytes(), elf.ram_bytes()), (8, 16));
            assert_eq!(elf.symbol("main"), None);
        }
    }

    #[test]
    fn refuses_other_files() {
        assert!(Elf::parse(b"#!/bin/sh\n").is_err());
        assert!(Elf::parse(&image()[..60]).is_err());
    }
}
