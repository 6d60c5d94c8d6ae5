//! The C math functions generated kernels call, exported from the `libm` crate under their C
//! names. A microcontroller target has no libc; the host has one, so this module is behind the
//! `c-math` feature, which only board builds enable.

macro_rules! export {
    ($($name:ident($($arg:ident: $ty:ty),+) -> $ret:ty;)+) => {$(
        #[doc = concat!("C `", stringify!($name), "`, from `libm`.")]
        #[no_mangle]
        pub extern "C" fn $name($($arg: $ty),+) -> $ret {
            libm::$name($($arg),+)
        }
    )+};
}

export! {
    expf(x: f32) -> f32;
    exp2f(x: f32) -> f32;
    logf(x: f32) -> f32;
    log2f(x: f32) -> f32;
    sqrtf(x: f32) -> f32;
    sinf(x: f32) -> f32;
    cosf(x: f32) -> f32;
    tanhf(x: f32) -> f32;
    powf(x: f32, y: f32) -> f32;
    fabsf(x: f32) -> f32;
    floorf(x: f32) -> f32;
    ceilf(x: f32) -> f32;
    roundf(x: f32) -> f32;
    truncf(x: f32) -> f32;
    fmaxf(x: f32, y: f32) -> f32;
    fminf(x: f32, y: f32) -> f32;
    erff(x: f32) -> f32;
    exp(x: f64) -> f64;
    exp2(x: f64) -> f64;
    log(x: f64) -> f64;
    log2(x: f64) -> f64;
    sqrt(x: f64) -> f64;
    sin(x: f64) -> f64;
    cos(x: f64) -> f64;
    tanh(x: f64) -> f64;
    pow(x: f64, y: f64) -> f64;
    fabs(x: f64) -> f64;
    floor(x: f64) -> f64;
    ceil(x: f64) -> f64;
    round(x: f64) -> f64;
    trunc(x: f64) -> f64;
    fmax(x: f64, y: f64) -> f64;
    fmin(x: f64, y: f64) -> f64;
    erf(x: f64) -> f64;
}
