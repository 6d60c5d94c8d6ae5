//! One run of a schedule on a Vulkan device: a compute pipeline per kernel, a descriptor set per
//! launch (its buffers bound at their offsets), one command buffer that dispatches every launch
//! in order, with the arena copies each needs before and after it, a barrier between any two of
//! these, and timestamps around each dispatch.

use super::context::{driver, HostBuffer, Vk};
use crate::gpu::placement::{ArenaCopy, Launch, Region};
use crate::gpu::{DeviceError, GpuKernel};
use ash::vk;
use std::time::Duration;

/// The stages a run's commands run in: dispatches, and the copies between them.
const DEVICE_STAGES: vk::PipelineStageFlags = vk::PipelineStageFlags::from_raw(
    vk::PipelineStageFlags::COMPUTE_SHADER.as_raw() | vk::PipelineStageFlags::TRANSFER.as_raw(),
);

/// Everything one run makes; destroyed on drop, also when the run fails half-way.
pub(super) struct Exec<'a> {
    vk: &'a Vk,
    pub buffers: Vec<HostBuffer>,
    modules: Vec<vk::ShaderModule>,
    set_layouts: Vec<vk::DescriptorSetLayout>,
    layouts: Vec<vk::PipelineLayout>,
    pipelines: Vec<vk::Pipeline>,
    pool: vk::DescriptorPool,
    commands: vk::CommandPool,
    queries: vk::QueryPool,
    fence: vk::Fence,
    /// The recorded command buffer, and the number of launches it times.
    recorded: Option<(vk::CommandBuffer, u32)>,
}

impl<'a> Exec<'a> {
    pub fn new(vk: &'a Vk) -> Exec<'a> {
        Exec {
            vk,
            buffers: Vec::new(),
            modules: Vec::new(),
            set_layouts: Vec::new(),
            layouts: Vec::new(),
            pipelines: Vec::new(),
            pool: vk::DescriptorPool::null(),
            commands: vk::CommandPool::null(),
            queries: vk::QueryPool::null(),
            fence: vk::Fence::null(),
            recorded: None,
        }
    }

    /// A compute pipeline for each kernel, from its SPIR-V.
    pub fn pipelines(
        &mut self,
        kernels: &[GpuKernel],
        spirv: &[Vec<u32>],
    ) -> Result<(), DeviceError> {
        let d = &self.vk.device;
        for (k, code) in kernels.iter().zip(spirv) {
            let bindings: Vec<vk::DescriptorSetLayoutBinding> = (0..k.buffers as u32)
                .map(|b| {
                    vk::DescriptorSetLayoutBinding::default()
                        .binding(b)
                        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                        .descriptor_count(1)
                        .stage_flags(vk::ShaderStageFlags::COMPUTE)
                })
                .collect();
            // SAFETY: valid create infos on a live device; each handle is kept for drop.
            unsafe {
                let info = vk::ShaderModuleCreateInfo::default().code(code);
                let module = d
                    .create_shader_module(&info, None)
                    .map_err(driver("vkCreateShaderModule"))?;
                self.modules.push(module);
                let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
                let set_layout = d
                    .create_descriptor_set_layout(&info, None)
                    .map_err(driver("vkCreateDescriptorSetLayout"))?;
                self.set_layouts.push(set_layout);
                let sets = [set_layout];
                let info = vk::PipelineLayoutCreateInfo::default().set_layouts(&sets);
                let layout = d
                    .create_pipeline_layout(&info, None)
                    .map_err(driver("vkCreatePipelineLayout"))?;
                self.layouts.push(layout);
                let stage = vk::PipelineShaderStageCreateInfo::default()
                    .stage(vk::ShaderStageFlags::COMPUTE)
                    .module(module)
                    .name(c"main");
                let info = [vk::ComputePipelineCreateInfo::default()
                    .stage(stage)
                    .layout(layout)];
                let p = d
                    .create_compute_pipelines(vk::PipelineCache::null(), &info, None)
                    .map_err(|(_, e)| driver("vkCreateComputePipelines")(e))?;
                self.pipelines.extend(p);
            }
        }
        Ok(())
    }

    /// Records every launch into one command buffer, to submit with [`Exec::submit`].
    pub fn record(
        &mut self,
        kernels: &[GpuKernel],
        launches: &[Launch],
        arena: vk::Buffer,
        weights: vk::Buffer,
    ) -> Result<(), DeviceError> {
        let sets = self.descriptor_sets(launches, arena, weights)?;
        let vk = self.vk;
        let d = &vk.device;
        let n = launches.len() as u32;
        let cb = self.command_buffer()?;
        let timed = vk.timestamp_ns.is_some() && n > 0;
        if timed {
            self.query_pool(2 * n)?;
        }
        // SAFETY: the command buffer and the query pool were made just now on this device;
        // the command buffer only names objects of this run, which outlive the wait in
        // `submit`.
        unsafe {
            let begin = vk::CommandBufferBeginInfo::default();
            d.begin_command_buffer(cb, &begin)
                .map_err(driver("vkBeginCommandBuffer"))?;
            if timed {
                d.cmd_reset_query_pool(cb, self.queries, 0, 2 * n);
            }
            for (i, (l, set)) in launches.iter().zip(&sets).enumerate() {
                self.record_copies(cb, arena, &l.before);
                self.record_launch(cb, &kernels[l.kernel], l.kernel, *set, timed.then_some(i));
                self.record_copies(cb, arena, &l.after);
            }
            let to_host = vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE)
                .dst_access_mask(vk::AccessFlags::HOST_READ);
            d.cmd_pipeline_barrier(
                cb,
                DEVICE_STAGES,
                vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                &[to_host],
                &[],
                &[],
            );
            d.end_command_buffer(cb)
                .map_err(driver("vkEndCommandBuffer"))?;
            self.fence = d
                .create_fence(&vk::FenceCreateInfo::default(), None)
                .map_err(driver("vkCreateFence"))?;
        }
        self.recorded = Some((cb, if timed { n } else { 0 }));
        Ok(())
    }

    /// The run's command pool and its one primary command buffer.
    fn command_buffer(&mut self) -> Result<vk::CommandBuffer, DeviceError> {
        let vk = self.vk;
        let d = &vk.device;
        // SAFETY: valid create infos on a live device.
        unsafe {
            let info = vk::CommandPoolCreateInfo::default().queue_family_index(vk.queue_family);
            self.commands = d
                .create_command_pool(&info, None)
                .map_err(driver("vkCreateCommandPool"))?;
            let info = vk::CommandBufferAllocateInfo::default()
                .command_pool(self.commands)
                .level(vk::CommandBufferLevel::PRIMARY)
                .command_buffer_count(1);
            Ok(d.allocate_command_buffers(&info)
                .map_err(driver("vkAllocateCommandBuffers"))?[0])
        }
    }

    /// The run's pool of `count` timestamp queries.
    fn query_pool(&mut self, count: u32) -> Result<(), DeviceError> {
        let info = vk::QueryPoolCreateInfo::default()
            .query_type(vk::QueryType::TIMESTAMP)
            .query_count(count);
        // SAFETY: a valid create info on a live device.
        self.queries = unsafe { self.vk.device.create_query_pool(&info, None) }
            .map_err(driver("vkCreateQueryPool"))?;
        Ok(())
    }

    /// Records one launch of `k` (pipeline `pipeline`) on descriptor set `set`, with
    /// timestamps around it as launch `timed` when given, and a barrier after it.
    ///
    /// # Safety
    ///
    /// `cb` is this run's command buffer, recording; with `timed`, the query pool holds two
    /// queries per launch.
    unsafe fn record_launch(
        &self,
        cb: vk::CommandBuffer,
        k: &GpuKernel,
        pipeline: usize,
        set: vk::DescriptorSet,
        timed: Option<usize>,
    ) {
        let d = &self.vk.device;
        let stage = vk::PipelineStageFlags::COMPUTE_SHADER;
        // SAFETY: the caller's; the pipeline, its layout and the set belong to this run.
        unsafe {
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, self.pipelines[pipeline]);
            d.cmd_bind_descriptor_sets(
                cb,
                vk::PipelineBindPoint::COMPUTE,
                self.layouts[pipeline],
                0,
                &[set],
                &[],
            );
            if let Some(i) = timed {
                d.cmd_write_timestamp(cb, stage, self.queries, 2 * i as u32);
            }
            let [x, y, z] = k.groups.map(|g| g as u32);
            d.cmd_dispatch(cb, x, y, z);
            if let Some(i) = timed {
                d.cmd_write_timestamp(cb, stage, self.queries, 2 * i as u32 + 1);
            }
            self.record_barrier(cb);
        }
    }

    /// Records `copies` within the arena, in order, and a barrier after them. Copies whose
    /// ranges meet go in separate commands with a barrier between, so that the later one
    /// lands last.
    ///
    /// # Safety
    ///
    /// `cb` is this run's command buffer, recording; `arena` is this run's arena buffer, and
    /// every copy lies within it.
    unsafe fn record_copies(&self, cb: vk::CommandBuffer, arena: vk::Buffer, copies: &[ArenaCopy]) {
        if copies.is_empty() {
            return;
        }
        // Whether two byte ranges, each an offset and a length, share a byte.
        let meet = |(a, m): (u64, u64), (b, n): (u64, u64)| a < b + n && b < a + m;
        let mut batch: Vec<vk::BufferCopy> = Vec::with_capacity(copies.len());
        for c in copies {
            let (from, to) = (
                (c.from as u64, c.bytes as u64),
                (c.to as u64, c.bytes as u64),
            );
            // One command's sources may not overlap its destinations, and its regions have no
            // order among them.
            let clash = batch.iter().any(|r| {
                let (src, dst) = ((r.src_offset, r.size), (r.dst_offset, r.size));
                meet(dst, to) || meet(dst, from) || meet(src, to)
            });
            if clash {
                // SAFETY: the caller's.
                unsafe {
                    self.vk.device.cmd_copy_buffer(cb, arena, arena, &batch);
                    self.record_barrier(cb);
                }
                batch.clear();
            }
            batch.push(
                vk::BufferCopy::default()
                    .src_offset(c.from as u64)
                    .dst_offset(c.to as u64)
                    .size(c.bytes as u64),
            );
        }
        // SAFETY: the caller's.
        unsafe {
            self.vk.device.cmd_copy_buffer(cb, arena, arena, &batch);
            self.record_barrier(cb);
        }
    }

    /// Records a barrier that makes every dispatch's and copy's writes so far visible to every
    /// later dispatch and copy, and orders them after the reads before it.
    ///
    /// # Safety
    ///
    /// `cb` is this run's command buffer, recording.
    unsafe fn record_barrier(&self, cb: vk::CommandBuffer) {
        let barrier = vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(
                vk::AccessFlags::SHADER_READ
                    | vk::AccessFlags::SHADER_WRITE
                    | vk::AccessFlags::TRANSFER_READ
                    | vk::AccessFlags::TRANSFER_WRITE,
            );
        // SAFETY: the caller's.
        unsafe {
            self.vk.device.cmd_pipeline_barrier(
                cb,
                DEVICE_STAGES,
                DEVICE_STAGES,
                vk::DependencyFlags::empty(),
                &[barrier],
                &[],
                &[],
            );
        }
    }

    /// Submits the recorded launches; waits; returns each launch's device time (zero when the
    /// queue has no timestamps).
    pub fn submit(&mut self, launches: usize) -> Result<Vec<Duration>, DeviceError> {
        let vk = self.vk;
        let d = &vk.device;
        let (cb, timed) = self.recorded.expect("recorded before submitting");
        // SAFETY: the command buffer and fence are this run's; the fence is reset before reuse
        // and waited on before returning.
        unsafe {
            d.reset_fences(&[self.fence])
                .map_err(driver("vkResetFences"))?;
            let cbs = [cb];
            let submit = [vk::SubmitInfo::default().command_buffers(&cbs)];
            d.queue_submit(vk.queue, &submit, self.fence)
                .map_err(driver("vkQueueSubmit"))?;
            d.wait_for_fences(&[self.fence], true, u64::MAX)
                .map_err(driver("vkWaitForFences"))?;
            if timed == 0 {
                return Ok(vec![Duration::ZERO; launches]);
            }
            let mut stamps = vec![0u64; 2 * timed as usize];
            d.get_query_pool_results(
                self.queries,
                0,
                &mut stamps,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
            )
            .map_err(driver("vkGetQueryPoolResults"))?;
            let tick = vk.timestamp_ns.unwrap_or(1.0);
            Ok(stamps
                .chunks_exact(2)
                .map(|p| Duration::from_nanos((p[1].saturating_sub(p[0]) as f64 * tick) as u64))
                .collect())
        }
    }

    /// One descriptor set per launch, each binding its buffers at their offsets.
    fn descriptor_sets(
        &mut self,
        launches: &[Launch],
        arena: vk::Buffer,
        weights: vk::Buffer,
    ) -> Result<Vec<vk::DescriptorSet>, DeviceError> {
        let d = &self.vk.device;
        let total: usize = launches.iter().map(|l| l.args.len()).sum();
        let sizes = [vk::DescriptorPoolSize::default()
            .ty(vk::DescriptorType::STORAGE_BUFFER)
            .descriptor_count(total.max(1) as u32)];
        let info = vk::DescriptorPoolCreateInfo::default()
            .max_sets(launches.len().max(1) as u32)
            .pool_sizes(&sizes);
        // SAFETY: valid create and update infos on a live device.
        unsafe {
            self.pool = d
                .create_descriptor_pool(&info, None)
                .map_err(driver("vkCreateDescriptorPool"))?;
            let layouts: Vec<vk::DescriptorSetLayout> = launches
                .iter()
                .map(|l| self.set_layouts[l.kernel])
                .collect();
            if layouts.is_empty() {
                return Ok(Vec::new());
            }
            let info = vk::DescriptorSetAllocateInfo::default()
                .descriptor_pool(self.pool)
                .set_layouts(&layouts);
            let sets = d
                .allocate_descriptor_sets(&info)
                .map_err(driver("vkAllocateDescriptorSets"))?;
            let infos: Vec<Vec<vk::DescriptorBufferInfo>> = launches
                .iter()
                .map(|l| {
                    l.args
                        .iter()
                        .map(|s| {
                            let buffer = match s.region {
                                Region::Arena => arena,
                                Region::Weights => weights,
                            };
                            vk::DescriptorBufferInfo::default()
                                .buffer(buffer)
                                .offset(s.offset as u64)
                                .range(s.bytes as u64)
                        })
                        .collect()
                })
                .collect();
            let mut writes = Vec::with_capacity(total);
            for (set, infos) in sets.iter().zip(&infos) {
                for (b, info) in infos.iter().enumerate() {
                    writes.push(
                        vk::WriteDescriptorSet::default()
                            .dst_set(*set)
                            .dst_binding(b as u32)
                            .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                            .buffer_info(std::slice::from_ref(info)),
                    );
                }
            }
            d.update_descriptor_sets(&writes, &[]);
            Ok(sets)
        }
    }
}

impl Drop for Exec<'_> {
    fn drop(&mut self) {
        let d = &self.vk.device;
        // SAFETY: the queue is idle (waited on, or never submitted to); each handle was made
        // by this device, and null handles are ignored by the destroy functions.
        unsafe {
            let _ = d.queue_wait_idle(self.vk.queue);
            d.destroy_fence(self.fence, None);
            d.destroy_query_pool(self.queries, None);
            d.destroy_command_pool(self.commands, None);
            d.destroy_descriptor_pool(self.pool, None);
            for &p in &self.pipelines {
                d.destroy_pipeline(p, None);
            }
            for &l in &self.layouts {
                d.destroy_pipeline_layout(l, None);
            }
            for &l in &self.set_layouts {
                d.destroy_descriptor_set_layout(l, None);
            }
            for &m in &self.modules {
                d.destroy_shader_module(m, None);
            }
        }
        for b in self.buffers.drain(..) {
            self.vk.free(b);
        }
    }
}
