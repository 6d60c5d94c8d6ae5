//! Kiln's `no_std`, heap-free runtime.
#![no_std]
