//! A Vulkan instance and logical device with one compute queue, host-visible buffers, and the
//! device's limits. Everything made here is destroyed when the [`Vk`] is dropped.

use super::API;
use crate::gpu::{DeviceError, DriverError};
use ash::vk;
use kiln_codegen::target::DeviceLimits;
use std::ffi::CStr;

pub(super) fn driver(call: &'static str) -> impl Fn(vk::Result) -> DeviceError {
    move |e| DeviceError::Driver {
        api: API,
        call,
        source: Box::new(e),
    }
}

/// A buffer with its memory, mapped for the host.
pub(super) struct HostBuffer {
    pub buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    pub ptr: *mut u8,
}

/// An instance, a device with a compute queue, and what the device allows.
pub struct Vk {
    _entry: ash::Entry,
    instance: ash::Instance,
    pub(super) device: ash::Device,
    pub(super) queue: vk::Queue,
    pub(super) queue_family: u32,
    memory: vk::PhysicalDeviceMemoryProperties,
    /// The device's name as its driver reports it.
    pub name: String,
    pub limits: DeviceLimits,
    /// Bytes a storage buffer's offset must be a multiple of.
    pub align: usize,
    /// Nanoseconds per timestamp tick; `None` when the queue has no timestamps.
    pub timestamp_ns: Option<f64>,
    /// Storage buffers of 8-bit values (Kiln's booleans) are enabled.
    pub bytes_storage: bool,
    /// 64-bit integers in shaders (`shaderInt64`) are enabled.
    pub int64: bool,
    /// Storage buffers of 16-bit integers and their arithmetic (`storageBuffer16BitAccess`,
    /// `shaderInt16`) are enabled.
    pub shorts: bool,
    /// Most storage buffers one shader may bind, and most bytes one binding may span.
    pub bindings_max: usize,
    pub binding_bytes_max: usize,
}

impl Vk {
    /// The first device with a compute queue, or the first whose name contains `wanted`.
    pub fn new(wanted: &str) -> Result<Vk, DeviceError> {
        let no_driver = |call, source: DriverError| DeviceError::NoDriver {
            api: API,
            call,
            source,
        };
        // SAFETY: loading the Vulkan loader library; its functions are used as documented.
        let entry = unsafe { ash::Entry::load() }
            .map_err(|e| no_driver("loading the Vulkan loader", e.into()))?;
        let app = vk::ApplicationInfo::default()
            .application_name(c"kiln")
            .api_version(vk::API_VERSION_1_2);
        let info = vk::InstanceCreateInfo::default().application_info(&app);
        // SAFETY: a valid create info with no extensions or layers.
        let instance = unsafe { entry.create_instance(&info, None) }
            .map_err(|e| no_driver("vkCreateInstance", Box::new(e)))?;
        match Self::open(&entry, &instance, wanted) {
            Ok(parts) => Ok(Vk::assemble(entry, instance, parts)),
            Err(e) => {
                // SAFETY: nothing was made from the instance.
                unsafe { instance.destroy_instance(None) };
                Err(e)
            }
        }
    }

    fn assemble(entry: ash::Entry, instance: ash::Instance, p: Parts) -> Vk {
        Vk {
            _entry: entry,
            instance,
            device: p.device,
            queue: p.queue,
            queue_family: p.queue_family,
            memory: p.memory,
            name: p.name,
            limits: p.limits,
            align: p.align,
            timestamp_ns: p.timestamp_ns,
            bytes_storage: p.bytes_storage,
            int64: p.int64,
            shorts: p.shorts,
            bindings_max: p.bindings_max,
            binding_bytes_max: p.binding_bytes_max,
        }
    }

    fn open(
        entry: &ash::Entry,
        instance: &ash::Instance,
        wanted: &str,
    ) -> Result<Parts, DeviceError> {
        let _ = entry;
        // SAFETY: queries on a live instance.
        let devices = unsafe { instance.enumerate_physical_devices() }
            .map_err(driver("vkEnumeratePhysicalDevices"))?;
        for pd in devices {
            // SAFETY: queries on a physical device of this instance.
            let props = unsafe { instance.get_physical_device_properties(pd) };
            let name = props
                .device_name_as_c_str()
                .map(CStr::to_string_lossy)
                .unwrap_or_default()
                .into_owned();
            let families = unsafe { instance.get_physical_device_queue_family_properties(pd) };
            let family = families
                .iter()
                .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE));
            if let (true, Some(family)) = (name.contains(wanted), family) {
                let stamp_bits = families[family].timestamp_valid_bits;
                return open_device(instance, pd, props, name, family as u32, stamp_bits);
            }
        }
        Err(DeviceError::NoDevice {
            api: API,
            reason: format!("no device with a compute queue has a name containing `{wanted}`"),
        })
    }

    /// A host-visible, coherent storage buffer of `bytes` bytes, mapped; copies may read and
    /// write it (runs copy unaligned slices to aligned ones within the arena).
    pub(super) fn buffer(&self, bytes: usize) -> Result<HostBuffer, DeviceError> {
        let d = &self.device;
        let usage = vk::BufferUsageFlags::STORAGE_BUFFER
            | vk::BufferUsageFlags::TRANSFER_SRC
            | vk::BufferUsageFlags::TRANSFER_DST;
        let info = vk::BufferCreateInfo::default()
            .size(bytes as u64)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY: valid create infos on a live device; the memory type is checked below.
        unsafe {
            let buffer = d
                .create_buffer(&info, None)
                .map_err(driver("vkCreateBuffer"))?;
            let req = d.get_buffer_memory_requirements(buffer);
            let want =
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
            let index = (0..self.memory.memory_type_count).find(|&i| {
                req.memory_type_bits & (1 << i) != 0
                    && self.memory.memory_types[i as usize]
                        .property_flags
                        .contains(want)
            });
            let Some(index) = index else {
                d.destroy_buffer(buffer, None);
                return Err(DeviceError::NoDevice {
                    api: API,
                    reason: "no host-visible, coherent memory for storage buffers".into(),
                });
            };
            let alloc = vk::MemoryAllocateInfo::default()
                .allocation_size(req.size)
                .memory_type_index(index);
            let memory = d
                .allocate_memory(&alloc, None)
                .map_err(driver("vkAllocateMemory"))?;
            d.bind_buffer_memory(buffer, memory, 0)
                .map_err(driver("vkBindBufferMemory"))?;
            let ptr = d
                .map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())
                .map_err(driver("vkMapMemory"))?
                .cast::<u8>();
            std::ptr::write_bytes(ptr, 0, bytes);
            Ok(HostBuffer {
                buffer,
                memory,
                ptr,
            })
        }
    }

    pub(super) fn free(&self, b: HostBuffer) {
        // SAFETY: the buffer is no longer in use (the queue is idle).
        unsafe {
            self.device.unmap_memory(b.memory);
            self.device.destroy_buffer(b.buffer, None);
            self.device.free_memory(b.memory, None);
        }
    }
}

impl Drop for Vk {
    fn drop(&mut self) {
        // SAFETY: everything made from the device was destroyed by its user.
        unsafe {
            let _ = self.device.device_wait_idle();
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

struct Parts {
    device: ash::Device,
    queue: vk::Queue,
    queue_family: u32,
    memory: vk::PhysicalDeviceMemoryProperties,
    name: String,
    limits: DeviceLimits,
    align: usize,
    timestamp_ns: Option<f64>,
    bytes_storage: bool,
    int64: bool,
    shorts: bool,
    bindings_max: usize,
    binding_bytes_max: usize,
}

fn open_device(
    instance: &ash::Instance,
    pd: vk::PhysicalDevice,
    props: vk::PhysicalDeviceProperties,
    name: String,
    family: u32,
    stamp_bits: u32,
) -> Result<Parts, DeviceError> {
    let v12 = props.api_version >= vk::API_VERSION_1_2;
    let mut have11 = vk::PhysicalDeviceVulkan11Features::default();
    let mut have12 = vk::PhysicalDeviceVulkan12Features::default();
    let mut have = vk::PhysicalDeviceFeatures2::default();
    if v12 {
        have = have.push_next(&mut have11).push_next(&mut have12);
    }
    // SAFETY: a query on a physical device of this instance.
    unsafe { instance.get_physical_device_features2(pd, &mut have) };
    let double = have.features.shader_float64 == vk::TRUE;
    let int64 = have.features.shader_int64 == vk::TRUE;
    let int16 = have.features.shader_int16 == vk::TRUE;
    let bytes_storage =
        v12 && have12.storage_buffer8_bit_access == vk::TRUE && have12.shader_int8 == vk::TRUE;
    let half = v12 && have12.shader_float16 == vk::TRUE;
    let shorts = v12 && have11.storage_buffer16_bit_access == vk::TRUE && int16;
    let features = vk::PhysicalDeviceFeatures::default()
        .shader_float64(double)
        .shader_int64(int64)
        .shader_int16(shorts);
    let mut want11 =
        vk::PhysicalDeviceVulkan11Features::default().storage_buffer16_bit_access(shorts);
    let mut want12 = vk::PhysicalDeviceVulkan12Features::default()
        .storage_buffer8_bit_access(bytes_storage)
        .shader_int8(bytes_storage);
    let priorities = [1.0f32];
    let queues = [vk::DeviceQueueCreateInfo::default()
        .queue_family_index(family)
        .queue_priorities(&priorities)];
    let mut info = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queues)
        .enabled_features(&features);
    if v12 {
        info = info.push_next(&mut want11).push_next(&mut want12);
    }
    // SAFETY: valid create infos; the features enabled are ones the device reported.
    let device =
        unsafe { instance.create_device(pd, &info, None) }.map_err(driver("vkCreateDevice"))?;
    let queue = unsafe { device.get_device_queue(family, 0) };
    let memory = unsafe { instance.get_physical_device_memory_properties(pd) };
    let l = props.limits;
    let limits = DeviceLimits {
        groups_max: l.max_compute_work_group_count.map(|x| x as usize),
        local_max: l.max_compute_work_group_size.map(|x| x as usize),
        local_threads_max: l.max_compute_work_group_invocations as usize,
        shared_bytes: l.max_compute_shared_memory_size as usize,
        half,
        double,
    };
    Ok(Parts {
        device,
        queue,
        queue_family: family,
        memory,
        name,
        limits,
        align: l.min_storage_buffer_offset_alignment.max(4) as usize,
        timestamp_ns: (stamp_bits > 0).then_some(l.timestamp_period as f64),
        bytes_storage,
        int64,
        shorts,
        bindings_max: l.max_per_stage_descriptor_storage_buffers as usize,
        binding_bytes_max: l.max_storage_buffer_range as usize,
    })
}
