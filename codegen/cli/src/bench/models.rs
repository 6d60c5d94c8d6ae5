//! The benchmarked models: the MLPerf Tiny float models and the repository's ResNet block, two
//! large float networks generated with random weights, and the MLPerf Tiny int8 TFLite models.

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
    /// An ImageNet-size network (`scripts/make_large_models.py`): generated on first use, too
    /// big for any board, timed over fewer runs and with the hand-coded opts.
    pub large: bool,
}

/// Where the large networks are generated.
pub fn large_dir() -> PathBuf {
    repo_root().join("target/bench-models")
}

impl BenchModel {
    /// Kiln's host latency at most this many times onnxruntime's.
    pub fn target_vs_ort(&self) -> f64 {
        match self.large {
            true => super::TARGET_VS_ORT_LARGE,
            false => super::TARGET_VS_ORT,
        }
    }

    /// Timed inferences of this model when `runs` are asked for: a twentieth for a large
    /// network (one takes about 0.1 s), at least 5.
    pub fn runs(&self, runs: usize) -> usize {
        match self.large {
            true => (runs / 20).max(5),
            false => runs,
        }
    }
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
            large: false,
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
        large: false,
    };
    let large = |name: &'static str| BenchModel {
        large: true,
        ..float(name, large_dir().join(format!("{name}.onnx")), None, None)
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
        large("resnet50"),
        large("mobilenet"),
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
            large: false,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_large_networks_are_float_rows_with_their_own_target_and_fewer_runs() {
        let all = models(Path::new("mlperf"));
        let large: Vec<&BenchModel> = all.iter().filter(|m| m.large).collect();
        let names: Vec<&str> = large.iter().map(|m| m.name).collect();
        assert_eq!(names, ["resnet50", "mobilenet"]);
        for m in &large {
            assert_eq!(m.kind, Kind::Float);
            assert!(m.model.starts_with(large_dir()), "{}", m.model.display());
            assert_eq!(m.target_vs_ort(), super::super::TARGET_VS_ORT_LARGE);
            assert_eq!((m.runs(200), m.runs(20)), (10, 5));
        }
        let kws = all.iter().find(|m| m.name == "kws").unwrap();
        assert_eq!((kws.target_vs_ort(), kws.runs(200)), (1.0, 200));
    }
}
