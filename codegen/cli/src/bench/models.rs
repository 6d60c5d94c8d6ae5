//! The benchmarked models: the MLPerf Tiny float models and the repository's ResNet block.

use std::path::{Path, PathBuf};

/// One benchmarked model.
pub struct BenchModel {
    pub name: &'static str,
    pub onnx: PathBuf,
    pub tflite: Option<PathBuf>,
    /// TFLM's smallest arena as published in the models' README, when there is a float model.
    pub published_tflm: Option<usize>,
}

/// The repository's root folder.
pub fn repo_root() -> PathBuf {
    kiln_runners::board::root()
}

/// The models, their ONNX files in `dir/onnx` and TFLite files in `dir/tflite`.
pub fn models(dir: &Path) -> Vec<BenchModel> {
    let onnx = |f: &str| dir.join("onnx").join(f);
    let tflite = |f: &str| Some(dir.join("tflite").join(f));
    vec![
        BenchModel {
            name: "kws",
            onnx: onnx("kws_float.onnx"),
            tflite: None,
            published_tflm: None,
        },
        BenchModel {
            name: "vww",
            onnx: onnx("vww_float.onnx"),
            tflite: tflite("vww_96_float.tflite"),
            published_tflm: Some(324_800),
        },
        BenchModel {
            name: "ic",
            onnx: onnx("ic_float.onnx"),
            tflite: tflite("pretrainedResnet.tflite"),
            published_tflm: Some(203_376),
        },
        BenchModel {
            name: "ad",
            onnx: onnx("ad_float.onnx"),
            tflite: tflite("ad01_fp32.tflite"),
            published_tflm: Some(6_224),
        },
        BenchModel {
            name: "str_ww",
            onnx: onnx("str_ww_float.onnx"),
            tflite: None,
            published_tflm: None,
        },
        BenchModel {
            name: "resnet_block",
            onnx: repo_root().join("tests/models/residual.onnx"),
            tflite: None,
            published_tflm: None,
        },
    ]
}
