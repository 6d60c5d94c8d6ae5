//! The benchmarked models: the MLPerf Tiny float models and the repository's ResNet block, and
//! the MLPerf Tiny int8 TFLite models.

use std::path::{Path, PathBuf};

/// What a model's row is compared with, and in which table it stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A float ONNX model, against onnxruntime and tinygrad (TFLM's arena from the float .tflite).
    Float,
    /// An int8 .tflite, against TFLM's reference kernels and LiteRT on the same file.
    Int8,
}

impl Kind {
    /// The name `--only` selects all models of the kind by, and the refs script reads.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Float => "float",
            Kind::Int8 => "int8",
        }
    }
}

/// One benchmarked model.
pub struct BenchModel {
    pub name: &'static str,
    pub kind: Kind,
    /// The file Kiln compiles and the latency references run: ONNX (float) or TFLite (int8).
    pub model: PathBuf,
    /// The .tflite whose TFLM arena Kiln's is held against, when TFLM runs one.
    pub tflite: Option<PathBuf>,
    /// TFLM's smallest arena as published in the models' README, when there is such a model.
    pub published_tflm: Option<usize>,
}

impl BenchModel {
    /// A model named `name` of `kind` with no files, for tests.
    #[cfg(test)]
    pub fn named(name: &'static str, kind: Kind) -> BenchModel {
        BenchModel {
            name,
            kind,
            model: PathBuf::new(),
            tflite: None,
            published_tflm: None,
        }
    }
}

/// The repository's root folder.
pub fn repo_root() -> PathBuf {
    kiln_runners::board::root()
}

/// The models, their ONNX files in `dir/onnx` and TFLite files in `dir/tflite`: the float
/// ones, then the int8 ones.
pub fn models(dir: &Path) -> Vec<BenchModel> {
    let mut all = float_models(dir);
    all.extend(int8_models(dir));
    all
}

fn float_models(dir: &Path) -> Vec<BenchModel> {
    let onnx = |f: &str| dir.join("onnx").join(f);
    let tflite = |f: &str| Some(dir.join("tflite").join(f));
    let float = |name, model, tflite, published_tflm| BenchModel {
        name,
        kind: Kind::Float,
        model,
        tflite,
        published_tflm,
    };
    vec![
        float("kws", onnx("kws_float.onnx"), None, None),
        float(
            "vww",
            onnx("vww_float.onnx"),
            tflite("vww_96_float.tflite"),
            Some(324_800),
        ),
        float(
            "ic",
            onnx("ic_float.onnx"),
            tflite("pretrainedResnet.tflite"),
            Some(203_376),
        ),
        float(
            "ad",
            onnx("ad_float.onnx"),
            tflite("ad01_fp32.tflite"),
            Some(6_224),
        ),
        float("str_ww", onnx("str_ww_float.onnx"), None, None),
        float(
            "resnet_block",
            repo_root().join("tests/models/residual.onnx"),
            None,
            None,
        ),
    ]
}

/// The int8 models: Kiln, TFLM and LiteRT all run the .tflite, and TFLM's arena is its own.
fn int8_models(dir: &Path) -> Vec<BenchModel> {
    let int8 = |name, file: &str, published| {
        let path = dir.join("tflite").join(file);
        BenchModel {
            name,
            kind: Kind::Int8,
            model: path.clone(),
            tflite: Some(path),
            published_tflm: Some(published),
        }
    };
    vec![
        int8("kws_int8", "kws_ref_model.tflite", 24_272),
        int8("vww_int8", "vww_96_int8.tflite", 103_680),
        int8("ic_int8", "pretrainedResnet_quant.tflite", 55_984),
        int8("ad_int8", "ad01_int8.tflite", 3_984),
        int8("str_ww_int8", "str_ww_ref_model.tflite", 16_640),
    ]
}
