//! A UOp interpreter: runs a [`Linear`] program on host buffers, so that the linearizer can be
//! tested without any C compiler or device.
//!
//! Thread indices (`SPECIAL`) are run work-group by work-group; the threads of a group run in
//! phases separated by the top-level `BARRIER`s, so local memory behaves as on a device.

use super::{ArgId, Linear, UOpId, UOpKind};
use crate::dtype::{DType, Scalar};
use crate::ops::{eval_alu, AluOp, ConstValue};
use crate::tensor::{decode_element, encode_element, Tensor};
use std::collections::HashMap;

/// A host buffer: its element type and values.
#[derive(Clone, Debug, PartialEq)]
pub struct HostBuffer {
    pub dtype: Scalar,
    pub data: Vec<ConstValue>,
}

impl HostBuffer {
    pub fn zeros(dtype: Scalar, len: usize) -> Self {
        HostBuffer {
            dtype,
            data: vec![ConstValue::zero(dtype.into()); len],
        }
    }

    pub fn from_f64(dtype: Scalar, v: &[f64]) -> Self {
        HostBuffer {
            dtype,
            data: v
                .iter()
                .map(|&x| ConstValue::from_f64(dtype.into(), x))
                .collect(),
        }
    }

    pub fn to_f64(&self) -> Vec<f64> {
        self.data.iter().map(|v| v.as_f64()).collect()
    }

    /// Decodes little-endian, densely packed elements.
    pub fn from_bytes(dtype: Scalar, bytes: &[u8]) -> Self {
        let n = dtype.size();
        let data = bytes
            .chunks_exact(n)
            .map(|c| decode_element(dtype, c))
            .collect();
        HostBuffer { dtype, data }
    }

    /// Encodes the elements little-endian, densely packed.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.data.len() * self.dtype.size());
        for v in &self.data {
            encode_element(self.dtype, *v, &mut out);
        }
        out
    }
}

impl From<&Tensor> for HostBuffer {
    /// The tensor's elements, as the interpreter holds them.
    fn from(t: &Tensor) -> Self {
        HostBuffer {
            dtype: t.dtype(),
            data: t.values().collect(),
        }
    }
}

/// Why a program could not be interpreted.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum InterpError {
    #[error("uop {uop}: buffer data{buf} has no element {index} (length {len})")]
    OutOfBounds {
        uop: usize,
        buf: u32,
        index: i64,
        len: usize,
    },
    #[error("uop {uop}: buffer data{buf} was not provided")]
    MissingBuffer { uop: usize, buf: u32 },
    #[error("uop {uop}: variable {name} was not provided")]
    MissingVar { uop: usize, name: String },
    #[error("uop {uop}: {op} is undefined on these operands (division by zero)")]
    Undefined { uop: usize, op: String },
    #[error("uop {uop}: a barrier inside a loop or if is not supported by the interpreter")]
    NestedBarrier { uop: usize },
}

#[derive(Clone, Debug)]
enum Val {
    Scalar(ConstValue),
    Vector(Vec<ConstValue>),
    Global(ArgId),
    Local(usize),
}

impl Val {
    fn lane(&self, i: usize) -> ConstValue {
        match self {
            Val::Scalar(v) => *v,
            Val::Vector(v) => v[i],
            _ => ConstValue::Int(0),
        }
    }
    fn scalar(&self) -> ConstValue {
        self.lane(0)
    }
}

struct Thread {
    regs: Vec<Option<Val>>,
    ids: HashMap<String, i64>,
}

/// Runs `prog` with `bufs` (indexed by `ArgId`) and the named variables `vars`.
pub fn run(
    prog: &Linear,
    bufs: &mut HashMap<ArgId, HostBuffer>,
    vars: &HashMap<String, i64>,
) -> Result<(), InterpError> {
    let (globals, locals) = thread_dims(prog);
    let phases = phases(prog)?;
    let mut ctx = Ctx {
        prog,
        bufs,
        vars,
        locals_mem: Vec::new(),
        matching: matching_ends(prog),
    };
    for gid in odometer(&globals) {
        ctx.locals_mem = local_buffers(prog);
        let mut threads: Vec<Thread> = odometer(&locals)
            .map(|lid| {
                let mut ids = HashMap::new();
                for (n, v) in globals.iter().map(|g| &g.0).zip(&gid) {
                    ids.insert(n.clone(), *v);
                }
                for (n, v) in locals.iter().map(|g| &g.0).zip(&lid) {
                    ids.insert(n.clone(), *v);
                }
                Thread {
                    regs: vec![None; prog.uops.len()],
                    ids,
                }
            })
            .collect();
        for &(start, end) in &phases {
            for t in threads.iter_mut() {
                ctx.exec(t, start, end)?;
            }
        }
    }
    Ok(())
}

type Dims = Vec<(String, usize)>;

fn thread_dims(prog: &Linear) -> (Dims, Dims) {
    let (mut g, mut l) = (Vec::new(), Vec::new());
    for u in &prog.uops {
        if let UOpKind::Special {
            local, name, size, ..
        } = &u.kind
        {
            let v = if *local { &mut l } else { &mut g };
            if !v.iter().any(|(n, _)| n == name) {
                v.push((name.clone(), *size));
            }
        }
    }
    (g, l)
}

fn odometer(dims: &[(String, usize)]) -> impl Iterator<Item = Vec<i64>> {
    let sizes: Vec<usize> = dims.iter().map(|d| d.1).collect();
    let total: usize = sizes.iter().product();
    (0..total).map(move |mut k| {
        sizes
            .iter()
            .map(|&s| {
                let v = (k % s) as i64;
                k /= s;
                v
            })
            .collect()
    })
}

fn phases(prog: &Linear) -> Result<Vec<(usize, usize)>, InterpError> {
    let stacks = prog.block_stacks();
    let mut out = Vec::new();
    let mut start = 0;
    for (i, u) in prog.uops.iter().enumerate() {
        if matches!(u.kind, UOpKind::Barrier) {
            if !stacks[i].is_empty() {
                return Err(InterpError::NestedBarrier { uop: i });
            }
            out.push((start, i + 1));
            start = i + 1;
        }
    }
    out.push((start, prog.uops.len()));
    Ok(out)
}

fn matching_ends(prog: &Linear) -> HashMap<usize, usize> {
    let mut m = HashMap::new();
    for (i, u) in prog.uops.iter().enumerate() {
        if matches!(u.kind, UOpKind::EndRange | UOpKind::EndIf) {
            m.insert(u.src[0].index(), i);
        }
    }
    m
}

fn local_buffers(prog: &Linear) -> Vec<Vec<ConstValue>> {
    prog.uops
        .iter()
        .filter_map(|u| match &u.kind {
            UOpKind::DefineLocal { size, .. } => Some(vec![ConstValue::Int(0); *size]),
            _ => None,
        })
        .collect()
}

/// The value of instruction `id` in thread `t`, computed before it is read.
fn reg(t: &Thread, id: UOpId) -> Val {
    t.regs[id.index()].clone().expect("source computed")
}

struct Ctx<'a> {
    prog: &'a Linear,
    bufs: &'a mut HashMap<ArgId, HostBuffer>,
    vars: &'a HashMap<String, i64>,
    locals_mem: Vec<Vec<ConstValue>>,
    matching: HashMap<usize, usize>,
}

impl Ctx<'_> {
    fn exec(&mut self, t: &mut Thread, start: usize, end: usize) -> Result<(), InterpError> {
        let mut pc = start;
        let mut local_count = self.prog.uops[..start]
            .iter()
            .filter(|u| matches!(u.kind, UOpKind::DefineLocal { .. }))
            .count();
        while pc < end {
            if let Some(to) = self.jump(pc, t) {
                pc = to;
                continue;
            }
            t.regs[pc] = self.value(pc, t, &mut local_count)?;
            pc += 1;
        }
        Ok(())
    }

    /// Where a loop or an `IF` at `pc` sends control instead of to the next instruction: past
    /// the end of an empty loop or a false `IF`, back to the body of a loop with iterations
    /// left (its counter advanced).
    fn jump(&self, pc: usize, t: &mut Thread) -> Option<usize> {
        let prog = self.prog;
        let u = &prog.uops[pc];
        let int = |t: &Thread, id: UOpId| reg(t, id).scalar().as_i64();
        match &u.kind {
            UOpKind::Range { .. } if int(t, u.src[0]) >= int(t, u.src[1]) => {
                Some(self.matching[&pc] + 1)
            }
            UOpKind::EndRange => {
                let r = u.src[0].index();
                let v = int(t, u.src[0]) + 1;
                if v < int(t, prog.uops[r].src[1]) {
                    t.regs[r] = Some(Val::Scalar(ConstValue::Int(v)));
                    return Some(r + 1);
                }
                None
            }
            UOpKind::If if reg(t, u.src[0]).scalar().is_zero() => Some(self.matching[&pc] + 1),
            _ => None,
        }
    }

    /// The value of the instruction at `pc` (none for control flow and stores, which it
    /// performs).
    fn value(
        &mut self,
        pc: usize,
        t: &mut Thread,
        local_count: &mut usize,
    ) -> Result<Option<Val>, InterpError> {
        let prog = self.prog;
        let u = &prog.uops[pc];
        Ok(match &u.kind {
            UOpKind::DefineGlobal { buf, .. } => Some(Val::Global(*buf)),
            UOpKind::DefineLocal { .. } => {
                *local_count += 1;
                Some(Val::Local(*local_count - 1))
            }
            UOpKind::DefineVar { name, .. } => {
                let v = *self.vars.get(name).ok_or(InterpError::MissingVar {
                    uop: pc,
                    name: name.clone(),
                })?;
                Some(Val::Scalar(ConstValue::Int(v)))
            }
            UOpKind::Special { name, .. } => Some(Val::Scalar(ConstValue::Int(t.ids[name]))),
            UOpKind::Const(c) => Some(splat(*c, u.dtype)),
            UOpKind::DefineAcc { .. } => Some(reg(t, u.src[0])),
            // A loop that runs: its counter starts at the loop's start.
            UOpKind::Range { .. } => Some(Val::Scalar(ConstValue::Int(
                reg(t, u.src[0]).scalar().as_i64(),
            ))),
            UOpKind::EndRange | UOpKind::If | UOpKind::EndIf | UOpKind::Barrier | UOpKind::Sink => {
                None
            }
            UOpKind::Phi => {
                let v = reg(t, u.src[1]);
                t.regs[u.src[0].index()] = Some(v.clone());
                Some(v)
            }
            UOpKind::Load => Some(self.load(pc, t)?),
            UOpKind::Store => {
                self.store(pc, t)?;
                None
            }
            UOpKind::Alu(op) => Some(self.alu(pc, t, *op)?),
            UOpKind::Dot => Some(dot(
                u,
                |k| reg(t, u.src[k]),
                |k| prog.uops[u.src[k].index()].dtype,
            )),
            UOpKind::Cast => Some(cast(
                u,
                &u.src.iter().map(|s| reg(t, *s)).collect::<Vec<_>>(),
                |s| prog.uops[s].dtype,
            )),
            UOpKind::Bitcast => Some(bitcast(
                &reg(t, u.src[0]),
                prog.uops[u.src[0].index()].dtype,
                u.dtype,
            )),
            UOpKind::Gep(l) => Some(Val::Scalar(reg(t, u.src[0]).lane(*l as usize))),
        })
    }

    fn memory(&mut self, ptr: &Val) -> Option<(&mut Vec<ConstValue>, u32)> {
        match ptr {
            Val::Global(b) => self.bufs.get_mut(b).map(|h| (&mut h.data, b.0)),
            Val::Local(i) => self.locals_mem.get_mut(*i).map(|m| (m, 1000 + *i as u32)),
            _ => None,
        }
    }

    fn load(&mut self, pc: usize, t: &Thread) -> Result<Val, InterpError> {
        let u = &self.prog.uops[pc];
        let reg = |id: UOpId| t.regs[id.index()].clone().expect("source computed");
        let dtype = u.dtype.expect("load has a type");
        let has_gate = u.src.len() >= 4
            && !matches!(
                self.prog.uops[u.src[2].index()].kind,
                UOpKind::Barrier | UOpKind::If
            );
        if has_gate && reg(u.src[2]).scalar().is_zero() {
            return Ok(reg(u.src[3]));
        }
        let idx = reg(u.src[1]).scalar().as_i64();
        let (mem, buf) = self
            .memory(&reg(u.src[0]))
            .ok_or(InterpError::MissingBuffer { uop: pc, buf: 0 })?;
        let n = dtype.count as usize;
        let mut lanes = Vec::with_capacity(n);
        for k in 0..n as i64 {
            let v = usize::try_from(idx + k).ok().and_then(|i| mem.get(i));
            lanes.push(*v.ok_or(InterpError::OutOfBounds {
                uop: pc,
                buf,
                index: idx + k,
                len: mem.len(),
            })?);
        }
        let lanes: Vec<ConstValue> = lanes
            .into_iter()
            .map(|v| v.read_as(dtype.scalar()))
            .collect();
        Ok(if n == 1 {
            Val::Scalar(lanes[0])
        } else {
            Val::Vector(lanes)
        })
    }

    fn store(&mut self, pc: usize, t: &Thread) -> Result<(), InterpError> {
        let u = &self.prog.uops[pc];
        let reg = |id: UOpId| t.regs[id.index()].clone().expect("source computed");
        if u.src.len() == 4 && reg(u.src[3]).scalar().is_zero() {
            return Ok(());
        }
        let vdt = self.prog.uops[u.src[2].index()]
            .dtype
            .expect("stored value has a type");
        let idx = reg(u.src[1]).scalar().as_i64();
        let val = reg(u.src[2]);
        let (mem, buf) = self
            .memory(&reg(u.src[0]))
            .ok_or(InterpError::MissingBuffer { uop: pc, buf: 0 })?;
        for k in 0..vdt.count as usize {
            let i = idx + k as i64;
            let len = mem.len();
            let slot = usize::try_from(i).ok().and_then(|i| mem.get_mut(i));
            *slot.ok_or(InterpError::OutOfBounds {
                uop: pc,
                buf,
                index: i,
                len,
            })? = val.lane(k);
        }
        Ok(())
    }

    fn alu(&mut self, pc: usize, t: &Thread, op: AluOp) -> Result<Val, InterpError> {
        let u = &self.prog.uops[pc];
        let srcs: Vec<Val> = u
            .src
            .iter()
            .map(|s| t.regs[s.index()].clone().expect("computed"))
            .collect();
        let operand = self.prog.uops[u.src[u.src.len() - 1].index()]
            .dtype
            .expect("typed");
        let n = u.dtype.expect("typed").count as usize;
        let mut lanes = Vec::with_capacity(n);
        for k in 0..n {
            let args: Vec<ConstValue> = srcs.iter().map(|s| s.lane(k)).collect();
            lanes.push(
                eval_alu(op, operand.scalar(), &args).ok_or(InterpError::Undefined {
                    uop: pc,
                    op: op.to_string(),
                })?,
            );
        }
        Ok(if n == 1 {
            Val::Scalar(lanes[0])
        } else {
            Val::Vector(lanes)
        })
    }
}

/// A [`UOpKind::Dot`]: each lane of the accumulator plus the products of its lanes of the two
/// operands, each operand either one pack shared by every lane or a pack per lane.
fn dot(
    u: &super::UOp,
    operand: impl Fn(usize) -> Val,
    dtype: impl Fn(usize) -> Option<DType>,
) -> Val {
    let count = |k: usize| dtype(k).map_or(1, |d| d.count as usize);
    let lanes = u.dtype.map_or(1, |d| d.count as usize);
    let width = count(1).max(count(2)) / lanes;
    // Packs of different widths meet in pair order (the int8 side unpacked by `SXTB16`); the
    // order is its own inverse, so either side may hold it.
    let paired = dtype(1).map(|d| d.scalar) != dtype(2).map(|d| d.scalar);
    let at = |j: usize| match paired {
        true => crate::kernel::dot::PAIR_ORDER[j],
        false => j,
    };
    let (acc, a, b) = (operand(0), operand(1), operand(2));
    let start = |k: usize, lane: usize| if count(k) == width { 0 } else { lane * width };
    let scalar = u.dtype.expect("typed").scalar();
    let sums: Vec<ConstValue> = (0..lanes)
        .map(|l| {
            let sum = (0..width).fold(acc.lane(l).as_i64(), |s, j| {
                let x = a.lane(start(1, l) + j).as_i64();
                let y = b.lane(start(2, l) + at(j)).as_i64();
                s.wrapping_add(x.wrapping_mul(y))
            });
            ConstValue::from_i64(scalar, sum)
        })
        .collect();
    match sums.as_slice() {
        [one] => Val::Scalar(*one),
        _ => Val::Vector(sums),
    }
}

fn splat(c: ConstValue, dtype: Option<DType>) -> Val {
    match dtype {
        Some(d) if d.count > 1 => Val::Vector(vec![c; d.count as usize]),
        _ => Val::Scalar(c),
    }
}

fn cast(u: &super::UOp, srcs: &[Val], dtype_of: impl Fn(usize) -> Option<DType>) -> Val {
    let to = u.dtype.expect("cast has a type");
    if srcs.len() > 1 {
        return Val::Vector(srcs.iter().map(Val::scalar).collect());
    }
    let from = dtype_of(u.src[0].index()).expect("typed");
    let lanes: Vec<ConstValue> = (0..to.count as usize)
        .map(|k| srcs[0].lane(k).cast(from.scalar(), to.scalar()))
        .collect();
    if lanes.len() == 1 {
        Val::Scalar(lanes[0])
    } else {
        Val::Vector(lanes)
    }
}

fn bitcast(v: &Val, from: Option<DType>, to: Option<DType>) -> Val {
    let (from, to) = (from.expect("typed").scalar(), to.expect("typed").scalar());
    Val::Scalar(v.scalar().bitcast(from, to))
}
