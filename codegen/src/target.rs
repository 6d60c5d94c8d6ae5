//! What a target is: the capabilities every stage reads (threads, local memory, vectors, the
//! device's limits) and the language its kernels are rendered in. A target is data: the
//! optimizer, the linearizer and the renderer read it; none of them names a target.

use kiln_devices::Cpu;

/// The language a target's kernels are written in; the renderer holds each one's dialect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    /// C99 with the GCC/Clang vector extensions (hosts and microcontrollers).
    C,
    /// OpenCL C 1.2.
    OpenCl,
    /// GLSL compute, compiled to SPIR-V for Vulkan.
    Glsl,
}

/// What a GPU device allows: queried from the device at run time, or a target's portable
/// defaults for ahead-of-time builds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceLimits {
    /// Most work-groups of one launch on each axis (x, y, z).
    pub groups_max: [usize; 3],
    /// Most threads of one work-group on each axis.
    pub local_max: [usize; 3],
    /// Most threads in one work-group.
    pub local_threads_max: usize,
    /// Bytes of local (work-group shared) memory; 0 when the device has none.
    pub shared_bytes: usize,
    /// 16-bit floats can be computed and stored.
    pub half: bool,
    /// 64-bit floats can be computed and stored.
    pub double: bool,
}

/// What a target can do; read by the optimizer and the linearizer.
#[derive(Clone, Debug)]
pub struct Target {
    /// Short name used in reports and process-replay records (`c`, `opencl`, …).
    pub name: &'static str,
    /// Threads with local (work-group) ids exist; otherwise every dim is a loop.
    pub has_local: bool,
    /// Local (work-group shared) memory exists.
    pub has_shared: bool,
    /// Vector loads and stores of 2 or 4 floats are allowed.
    pub supports_float4: bool,
    /// Lanes of the CPU's float vectors that reduces are computed in (GCC/Clang vector
    /// extensions); 0 keeps every value scalar.
    pub simd_lanes: u8,
    /// With `simd_lanes`: int32 sums of int8 (or int16, int32) reads take the lanes too, each
    /// lane's loads widened as one vector. The renderer writes the conversions, the dot
    /// products and the high-word multiplies of these lanes with x86's or NEON's intrinsics
    /// where the C compiler has them (GCC builds some of them byte by byte through the stack
    /// otherwise).
    pub int_lanes: bool,
    /// Per-axis limits of the global size (x, y, z); `None` when unlimited.
    pub global_max: Option<Vec<usize>>,
    /// Per-axis limits of the local size (x, y, z).
    pub local_max: Option<Vec<usize>>,
    /// Bytes of local memory.
    pub shared_max: usize,
    /// Most threads in one work-group; `None` when only the per-axis limits apply.
    pub local_threads_max: Option<usize>,
    /// 16-bit and 64-bit floats can be rendered.
    pub supports_half: bool,
    pub supports_double: bool,
    /// A kernel may write its output over an input it reads only at the index it writes (the
    /// two buffers then alias). Off on GPUs, whose buffer bindings are not made to alias.
    pub writes_in_place: bool,
    /// Packed int8 dot products: four int8 products summed into an `i32` in one operation
    /// (a `Dot` micro-op), as the DSP extension of the Cortex-M4, M7 and M33
    /// computes them (`SXTB16` and `SMLAD`).
    pub packed_dot: bool,
    /// With packed dot products: an int8 weight that only one kernel reads is stored in flash
    /// widened to int16, each four in the order `SXTB16` unpacks a word of activations
    /// ([`Target::c_dsp_wide`]), so the inner loop loads it ready for `SMLAD`. Twice the
    /// weight's bytes.
    pub wide_weights: bool,
    /// With packed dot products: an int8 intermediate that a dot product reads is stored as
    /// int16 in the arena ([`Target::with_wide_activations`]), written widened once by the
    /// kernel that computes it, so the dot products load pairs ready for `SMLAD` instead of
    /// unpacking every word at every use. Twice those buffers' bytes of RAM.
    pub wide_activations: bool,
    /// With packed dot products: Helium's (MVE) vector dot products as well, sixteen int8
    /// products summed into an `i32` by one `VMLADAVA` from two 128-bit vector loads
    /// ([`Target::c_mve`]); an axis that sixteen do not divide takes the DSP's fours.
    pub helium_dot: bool,
    /// Int8 products summed in groups into each 32-bit lane of a vector accumulator, one
    /// group of a lane in one operation: 2 (x86's `vpmaddwd` on pairs widened to int16), 4
    /// (AArch64's `SDOT`), 0 for none. A dot product of that width along a reduce axis, on
    /// the lanes of [`Target::int_lanes`]: one operand is a group shared by every lane, the
    /// other a weight stored with each lane's group side by side (the kernel's vector axis).
    pub lane_dot: u8,
    /// What the arena planner trades: [`Memory::Speed`] keeps every kernel's buffers apart
    /// (but for elementwise kernels in place); [`Memory::Min`] lets a kernel write its output
    /// over a dying input wherever that makes the arena smaller.
    pub memory: Memory,
    /// The language the renderer writes for it.
    pub language: Language,
}

/// How the arena is planned ([`Target::memory`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Memory {
    /// Each kernel's output apart from its inputs (an elementwise kernel's over its input).
    #[default]
    Speed,
    /// A kernel's output over its dying input, shifted so that every byte is read before it
    /// is written over, wherever that makes the arena smaller; the kernel run backwards or
    /// without INTERIOR's split where that overlaps better, a padding with the depthwise
    /// convolution after it run a channel at a time, and runs of layers a band of rows at a
    /// time (their halo recomputed), where that is smaller. The same outputs, less RAM.
    Min,
}

impl Target {
    /// Plain C for CPUs and microcontrollers: no threads, no vectors.
    pub fn c() -> Self {
        Target {
            name: "c",
            has_local: false,
            has_shared: false,
            supports_float4: false,
            simd_lanes: 0,
            int_lanes: false,
            global_max: None,
            local_max: None,
            shared_max: 0,
            local_threads_max: None,
            supports_half: true,
            supports_double: true,
            writes_in_place: true,
            packed_dot: false,
            wide_weights: false,
            wide_activations: false,
            helium_dot: false,
            lane_dot: 0,
            memory: Memory::Speed,
            language: Language::C,
        }
    }

    /// Plain C for a microcontroller with the DSP extension (Cortex-M4, M7, M33): packed int8
    /// dot products, written with the ACLE's `__sxtb16` and `__smlad` (plain C where the
    /// compiler does not define `__ARM_FEATURE_DSP`).
    pub fn c_dsp() -> Self {
        Target {
            name: "c-dsp",
            packed_dot: true,
            ..Target::c()
        }
    }

    /// C for a Cortex-M55 (Helium, the M-profile vector extension): [`Target::c_dsp`] with
    /// Helium's sixteen-lane int8 dot products ([`Target::helium_dot`]), written with
    /// `arm_mve.h`'s `vldrbq_s8` and `vmladavaq_s8` (plain C where the compiler does not
    /// define `__ARM_FEATURE_MVE`).
    pub fn c_mve() -> Self {
        Target {
            name: "c-mve",
            helium_dot: true,
            ..Target::c_dsp()
        }
    }

    /// The lanes a packed dot product of this target may take, the widest first: none
    /// without packed dot products, 4 with the DSP's, 16 and 4 with Helium's, 2 or 4 in each
    /// vector lane with [`Target::lane_dot`].
    pub fn dot_widths(&self) -> &'static [usize] {
        match (self.packed_dot, self.helium_dot) {
            _ if self.lane_dot == 2 => &[2],
            _ if self.lane_dot == 4 => &[4],
            (false, _) => &[],
            (true, false) => &[4],
            (true, true) => &[16, 4],
        }
    }

    /// [`Target::c_dsp`] with its dot products' int8 weights widened to int16 pairs in flash
    /// ([`Target::wide_weights`]): fewer instructions per product for twice those weights'
    /// flash.
    pub fn c_dsp_wide() -> Self {
        Target::c_dsp()
            .with_wide_weights()
            .expect("c-dsp has packed dot products")
    }

    /// This target with its arena planned for `memory`.
    pub fn with_memory(&self, memory: Memory) -> Self {
        Target {
            memory,
            ..self.clone()
        }
    }

    /// This target with its dot products' weights widened ([`Target::c_dsp_wide`]), when its
    /// packed dot products are the DSP's, which unpack their operands; `None` otherwise.
    pub fn with_wide_weights(&self) -> Option<Self> {
        self.unpacks_dots().then(|| {
            Target {
                wide_weights: true,
                ..self.clone()
            }
            .named()
        })
    }

    /// This target with the int8 activations its dot products read stored as int16
    /// ([`Target::wide_activations`]), when its packed dot products are the DSP's, which
    /// unpack their operands; `None` otherwise.
    pub fn with_wide_activations(&self) -> Option<Self> {
        self.unpacks_dots().then(|| {
            Target {
                wide_activations: true,
                ..self.clone()
            }
            .named()
        })
    }

    /// Its packed dot products are the DSP's alone, which unpack each int8 word into pairs of
    /// halfwords (Helium's read int8 lanes as they are: widening would only add bytes).
    fn unpacks_dots(&self) -> bool {
        self.packed_dot && !self.helium_dot
    }

    /// A DSP target named after what it widens: `c-dsp`, `c-dsp-wide` (weights), `c-dsp-i16`
    /// (activations), `c-dsp-wide-i16` (both).
    fn named(self) -> Self {
        let name = match (self.wide_weights, self.wide_activations) {
            (false, false) => "c-dsp",
            (true, false) => "c-dsp-wide",
            (false, true) => "c-dsp-i16",
            (true, true) => "c-dsp-wide-i16",
        };
        Target { name, ..self }
    }

    /// The target a CPU's kernels are generated for, whoever asks (`kiln run` on a board, a
    /// board's or a user's build script): this machine's vectors on the host, NEON's on AArch64, packed int8 dot
    /// products ([`Target::c_dsp`]) on the cores with the DSP extension, Helium's too
    /// ([`Target::c_mve`]) on those with MVE, plain C elsewhere.
    pub fn for_cpu(cpu: Cpu) -> Self {
        match cpu {
            Cpu::Host => Target::host(),
            Cpu::Aarch64 | Cpu::Aarch64Dotprod => Target::neon(),
            cpu if cpu.mve() => Target::c_mve(),
            cpu if cpu.dsp() => Target::c_dsp(),
            _ => Target::c(),
        }
    }

    /// The names [`Target::by_name`] knows.
    pub const CPU_NAMES: [&'static str; 8] = [
        "c",
        "c-dsp",
        "c-dsp-wide",
        "c-dsp-i16",
        "c-dsp-wide-i16",
        "c-mve",
        "host",
        "neon",
    ];

    /// The target of a name the command line takes (one of [`Target::CPU_NAMES`]).
    pub fn by_name(name: &str) -> Option<Self> {
        let i16 = |t: Target| t.with_wide_activations();
        match name {
            "c" => Some(Target::c()),
            "c-dsp" => Some(Target::c_dsp()),
            "c-dsp-wide" => Some(Target::c_dsp_wide()),
            "c-dsp-i16" => i16(Target::c_dsp()),
            "c-dsp-wide-i16" => i16(Target::c_dsp_wide()),
            "c-mve" => Some(Target::c_mve()),
            "host" => Some(Target::host()),
            "neon" => Some(Target::neon()),
            _ => None,
        }
    }

    /// C for the CPU that builds it: reduces over float vectors (GCC/Clang vector extensions,
    /// which the C compiler maps onto the CPU's vector unit) of 8 lanes, or 16 where the CPU
    /// has 512-bit vectors; int8 products in int32 lanes, two a lane at once
    /// ([`Target::lane_dot`]).
    pub fn host() -> Self {
        Target {
            name: if host_has_wide_vectors() {
                "host-512"
            } else {
                "host"
            },
            simd_lanes: if host_has_wide_vectors() { 16 } else { 8 },
            int_lanes: true,
            lane_dot: 2,
            ..Target::c()
        }
    }

    /// C for a 64-bit Arm application core (AArch64): reduces over vectors of 8 lanes, which
    /// the C compiler computes as pairs of NEON's 128-bit registers, whatever machine builds
    /// it; int8 products four a lane at once ([`Target::lane_dot`]): `SDOT` where the core
    /// has dot products (Armv8.2-A's `dotprod`), widening multiplies and pairwise sums where
    /// it has not.
    pub fn neon() -> Self {
        Target {
            name: "neon",
            simd_lanes: 8,
            int_lanes: true,
            lane_dot: 4,
            ..Target::c()
        }
    }

    /// A GPU target for a device with `limits`: local dims, shared memory when the device has
    /// any, 4-wide vectors; 16-bit floats when `half`.
    fn gpu(name: &'static str, limits: &DeviceLimits, half: bool, language: Language) -> Self {
        Target {
            name,
            has_local: true,
            has_shared: limits.shared_bytes > 0,
            supports_float4: true,
            simd_lanes: 0,
            int_lanes: false,
            global_max: Some(limits.groups_max.to_vec()),
            local_max: Some(limits.local_max.to_vec()),
            shared_max: limits.shared_bytes,
            local_threads_max: Some(limits.local_threads_max),
            supports_half: half,
            supports_double: limits.double,
            writes_in_place: false,
            packed_dot: false,
            wide_weights: false,
            wide_activations: false,
            helium_dot: false,
            lane_dot: 0,
            memory: Memory::Speed,
            language,
        }
    }

    /// An abstract device with threads and local memory, for testing the GPU paths of the
    /// linearizer in the interpreter. Renders as C-style text that is not meant to compile.
    pub fn threaded(global_max: Vec<usize>, local_max: Vec<usize>) -> Self {
        Target {
            name: "threaded",
            has_local: true,
            has_shared: true,
            supports_float4: true,
            simd_lanes: 0,
            int_lanes: false,
            global_max: Some(global_max),
            local_max: Some(local_max),
            shared_max: 32768,
            local_threads_max: None,
            supports_half: true,
            supports_double: true,
            writes_in_place: false,
            packed_dot: false,
            wide_weights: false,
            wide_activations: false,
            helium_dot: false,
            lane_dot: 0,
            memory: Memory::Speed,
            language: Language::C,
        }
    }
}

/// Whether this CPU computes on 512-bit float vectors (AVX-512F).
fn host_has_wide_vectors() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

impl Target {
    /// OpenCL C 1.2 for a device with `limits`: local dims, local memory (when the device has
    /// any) and `float4` vectors.
    pub fn opencl(limits: &DeviceLimits) -> Self {
        Target::gpu("opencl", limits, limits.half, Language::OpenCl)
    }

    /// GLSL compute for a Vulkan device with `limits`: local dims, shared memory and `vec4`
    /// vectors. 16-bit floats are not rendered (GLSL needs explicit conversions for them).
    pub fn vulkan(limits: &DeviceLimits) -> Self {
        Target::gpu("vulkan", limits, false, Language::Glsl)
    }
}

impl DeviceLimits {
    /// Portable OpenCL defaults for ahead-of-time builds: 256 threads per work-group (what
    /// common embedded GPUs allow), 32 KiB of local memory (the OpenCL 1.2 minimum), group
    /// counts within 16 bits per axis, no half or double.
    pub fn opencl_default() -> Self {
        DeviceLimits {
            groups_max: [65535; 3],
            local_max: [256, 256, 64],
            local_threads_max: 256,
            shared_bytes: 32768,
            half: false,
            double: false,
        }
    }
}

impl DeviceLimits {
    /// The limits every Vulkan device meets (the specification's minimums): 65535 groups per
    /// axis, 128 threads per work-group (128 × 128 × 64 per axis), 16 KiB of shared memory.
    pub fn vulkan_default() -> Self {
        DeviceLimits {
            groups_max: [65535; 3],
            local_max: [128, 128, 64],
            local_threads_max: 128,
            shared_bytes: 16384,
            half: false,
            double: false,
        }
    }
}
