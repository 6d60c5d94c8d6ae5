//! The CPUs Kiln compiles kernels for, described once: the name a board's configuration and
//! the command line use, the Rust target triple, the C compiler's flags, and what the kernels
//! may use (the DSP extension's packed multiply-accumulates).
//!
//! Everything that needs to know a CPU reads this table: the compiler's `Target` for a CPU,
//! the `Builder` in a user's build script, the board crates' build scripts (a board names its
//! CPU as `KILN_CPU` in the `[env]` of its `.cargo/config.toml`) and the runners.

/// A CPU kernels are compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Cpu {
    /// The machine the build runs on (unit tests of firmware code, simulators).
    Host,
    /// Cortex-M0 (`thumbv6m-none-eabi`), no FPU.
    CortexM0,
    /// Cortex-M0+ (`thumbv6m-none-eabi`: RP2040), no FPU.
    CortexM0Plus,
    /// Cortex-M3 (`thumbv7m-none-eabi`), no FPU.
    CortexM3,
    /// Cortex-M4 without its FPU (`thumbv7em-none-eabi`).
    CortexM4,
    /// Cortex-M4F (`thumbv7em-none-eabihf`: nRF52840, STM32F4).
    CortexM4F,
    /// Cortex-M7 with a single-precision FPU (`thumbv7em-none-eabihf`).
    CortexM7F,
    /// Cortex-M7 with a double-precision FPU (`thumbv7em-none-eabihf`: QEMU's `cortex-m7`).
    CortexM7FD,
    /// Cortex-M33 without its FPU (`thumbv8m.main-none-eabi`).
    CortexM33,
    /// Cortex-M33 with its FPU (`thumbv8m.main-none-eabihf`).
    CortexM33F,
    /// Cortex-M55 with its FPU and Helium (`thumbv8m.main-none-eabihf`: QEMU's `cortex-m55`).
    CortexM55,
    /// 64-bit Arm application cores running Linux (`aarch64-unknown-linux-gnu`): Armv8-A with
    /// 128-bit NEON vectors (Cortex-A53 and later: Raspberry Pi 3 to 5, phones).
    Aarch64,
    /// [`Cpu::Aarch64`] with Armv8.2-A's int8 dot products (`SDOT`): Cortex-A55, A76 and
    /// later (Raspberry Pi 5, Jetson Orin, i.MX 93, phones since 2018).
    Aarch64Dotprod,
    /// RISC-V rv32imc (`riscv32imc-unknown-none-elf`: ESP32-C3).
    Rv32imc,
    /// RISC-V rv32imac (`riscv32imac-unknown-none-elf`).
    Rv32imac,
}

/// One row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuInfo {
    pub cpu: Cpu,
    /// The name boards and the command line use: `cortex-m4f`.
    pub name: &'static str,
    /// The Rust target triple firmware for it is built for (none for the host).
    /// A triple with an operating system (`-linux-`) builds a hosted program, with `std`.
    pub triple: Option<&'static str>,
    /// The C compiler's flags for it, beside the ones the `cc` crate picks for the triple.
    pub cflags: &'static [&'static str],
    /// The DSP extension (Armv7E-M, Armv8-M Mainline): packed 16-bit multiply-accumulates,
    /// which the int8 kernels use for dot products.
    pub dsp: bool,
    /// The M-profile vector extension (Helium, Armv8.1-M): 128-bit vectors of int8 lanes
    /// whose products one instruction sums, which the int8 kernels use for dot products.
    pub mve: bool,
}

/// On Arm, float16 tensors are `_Float16` in IEEE format (the runtime's `c-math` feature
/// provides the conversions GCC calls).
const FP16: &str = "-mfp16-format=ieee";

/// The `cc` crate passes `-march=armv8-m.main` for `thumbv8m.main` targets, which drops the
/// M33's DSP extension (`__ARM_FEATURE_DSP`): these flags, after it, bring it back (and the
/// M55's Helium and double-precision FPU, on Armv8.1-M).
const M33_DSP: &str = "-march=armv8-m.main+dsp";
const M33_DSP_FP: &str = "-march=armv8-m.main+dsp+fp";
const M55_DSP_MVE: &str = "-march=armv8.1-m.main+dsp+mve.fp+fp.dp";

/// Every CPU, the first of those sharing a triple being the one the triple implies; the last
/// two columns say whether it has the DSP extension and Helium.
#[rustfmt::skip]
pub const CPUS: [CpuInfo; 15] = [
    row(Cpu::Host, "host", None, &[], false, false),
    row(Cpu::CortexM0, "cortex-m0", Some("thumbv6m-none-eabi"), &["-mcpu=cortex-m0", "-mfloat-abi=soft", FP16], false, false),
    row(Cpu::CortexM0Plus, "cortex-m0plus", Some("thumbv6m-none-eabi"), &["-mcpu=cortex-m0plus", "-mfloat-abi=soft", FP16], false, false),
    row(Cpu::CortexM3, "cortex-m3", Some("thumbv7m-none-eabi"), &["-mcpu=cortex-m3", "-mfloat-abi=soft", FP16], false, false),
    row(Cpu::CortexM4, "cortex-m4", Some("thumbv7em-none-eabi"), &["-mcpu=cortex-m4", "-mfloat-abi=soft", FP16], true, false),
    row(Cpu::CortexM4F, "cortex-m4f", Some("thumbv7em-none-eabihf"), &["-mcpu=cortex-m4", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16", FP16], true, false),
    row(Cpu::CortexM7F, "cortex-m7f", Some("thumbv7em-none-eabihf"), &["-mcpu=cortex-m7", "-mfloat-abi=hard", "-mfpu=fpv5-sp-d16", FP16], true, false),
    row(Cpu::CortexM7FD, "cortex-m7fd", Some("thumbv7em-none-eabihf"), &["-mcpu=cortex-m7", "-mfloat-abi=hard", "-mfpu=fpv5-d16", FP16], true, false),
    row(Cpu::CortexM33, "cortex-m33", Some("thumbv8m.main-none-eabi"), &["-mcpu=cortex-m33", M33_DSP, "-mfloat-abi=soft", FP16], true, false),
    row(Cpu::CortexM33F, "cortex-m33f", Some("thumbv8m.main-none-eabihf"), &["-mcpu=cortex-m33", M33_DSP_FP, "-mfloat-abi=hard", "-mfpu=fpv5-sp-d16", FP16], true, false),
    row(Cpu::CortexM55, "cortex-m55", Some("thumbv8m.main-none-eabihf"), &["-mcpu=cortex-m55", M55_DSP_MVE, "-mfloat-abi=hard", FP16], true, true),
    row(Cpu::Aarch64, "aarch64", Some("aarch64-unknown-linux-gnu"), &["-march=armv8-a"], false, false),
    row(Cpu::Aarch64Dotprod, "aarch64-dotprod", Some("aarch64-unknown-linux-gnu"), &["-march=armv8.2-a+dotprod"], false, false),
    row(Cpu::Rv32imc, "rv32imc", Some("riscv32imc-unknown-none-elf"), &["-march=rv32imc", "-mabi=ilp32"], false, false),
    row(Cpu::Rv32imac, "rv32imac", Some("riscv32imac-unknown-none-elf"), &["-march=rv32imac", "-mabi=ilp32"], false, false),
];

const fn row(
    cpu: Cpu,
    name: &'static str,
    triple: Option<&'static str>,
    cflags: &'static [&'static str],
    dsp: bool,
    mve: bool,
) -> CpuInfo {
    CpuInfo {
        cpu,
        name,
        triple,
        cflags,
        dsp,
        mve,
    }
}

impl Cpu {
    /// Its row of the table.
    pub fn info(self) -> &'static CpuInfo {
        CPUS.iter()
            .find(|i| i.cpu == self)
            .expect("every CPU has a row")
    }

    pub fn name(self) -> &'static str {
        self.info().name
    }

    pub fn cflags(self) -> &'static [&'static str] {
        self.info().cflags
    }

    pub fn dsp(self) -> bool {
        self.info().dsp
    }

    pub fn mve(self) -> bool {
        self.info().mve
    }

    /// The CPU of a name in the table (`cortex-m4f`).
    pub fn by_name(name: &str) -> Option<Cpu> {
        CPUS.iter().find(|i| i.name == name).map(|i| i.cpu)
    }

    /// The CPU a Rust target triple implies, for the triples in the table; `host` is the
    /// triple of the machine the build runs on.
    pub fn from_triple(triple: &str, host: &str) -> Option<Cpu> {
        if triple == host {
            return Some(Cpu::Host);
        }
        CPUS.iter()
            .find(|i| i.triple == Some(triple))
            .map(|i| i.cpu)
    }

    /// Its programs run on an operating system (`std`, files, an exit status), not bare metal.
    pub fn hosted(self) -> bool {
        self == Cpu::Host || self.info().triple.is_some_and(|t| t.contains("-linux-"))
    }

    /// The names in the table, for an error that lists them.
    pub fn names() -> Vec<&'static str> {
        CPUS.iter().map(|i| i.name).collect()
    }
}

/// The variable a board's `.cargo/config.toml` names its CPU in (`[env] KILN_CPU = "…"`),
/// which its build script and the runners read.
pub const CPU_VAR: &str = "KILN_CPU";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cpu_has_one_row_and_a_unique_name() {
        for info in &CPUS {
            assert_eq!(info.cpu.info(), info);
            assert_eq!(Cpu::by_name(info.name), Some(info.cpu));
        }
    }

    #[test]
    fn a_triple_implies_its_first_cpu() {
        let host = "x86_64-unknown-linux-gnu";
        assert_eq!(
            Cpu::from_triple("thumbv7em-none-eabihf", host),
            Some(Cpu::CortexM4F)
        );
        assert_eq!(Cpu::from_triple(host, host), Some(Cpu::Host));
        assert_eq!(Cpu::from_triple("thumbv9-none", host), None);
    }

    #[test]
    fn the_dsp_extension_comes_with_armv7e_m_and_armv8_m_mainline() {
        for info in &CPUS {
            let arch = info.triple.unwrap_or("");
            let dsp = arch.starts_with("thumbv7em") || arch.starts_with("thumbv8m.main");
            assert_eq!(info.dsp, dsp, "{}", info.name);
        }
    }

    #[test]
    fn a_linux_triple_is_hosted_and_bare_metal_is_not() {
        assert!(Cpu::Aarch64.hosted() && Cpu::Aarch64Dotprod.hosted() && Cpu::Host.hosted());
        assert!(!Cpu::CortexM55.hosted() && !Cpu::Rv32imc.hosted());
    }
}
