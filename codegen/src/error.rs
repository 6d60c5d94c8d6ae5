//! Printing an error with its causes.
//!
//! Kiln's errors follow one convention: a variant that wraps another error keeps it as its
//! `source` and leaves it out of its own message, which gives only the context it adds (the
//! node, kernel, buffer, board or path). [`chain`] joins an error's message with its causes',
//! each once; `anyhow`'s `{:#}` prints the same at the command line.

use std::error::Error;

/// A cause from outside the compiler, kept as the error value it is: a runner's error (the
/// host's, a board's), a GPU driver's status. The compiler does not name those types.
pub type Cause = Box<dyn Error + Send + Sync + 'static>;

/// `e`'s message followed by each of its causes', joined by `: `.
pub fn chain(e: &dyn Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::chain;

    #[derive(Debug, thiserror::Error)]
    enum Outer {
        #[error("reading {path}")]
        Read {
            path: String,
            #[source]
            source: std::io::Error,
        },
    }

    #[test]
    fn each_cause_is_printed_once_after_its_context() {
        let e = Outer::Read {
            path: "model.onnx".into(),
            source: std::io::Error::other("no such file"),
        };
        assert_eq!(chain(&e), "reading model.onnx: no such file");
    }

    #[test]
    fn an_error_without_a_cause_is_its_message() {
        assert_eq!(chain(&std::io::Error::other("closed")), "closed");
    }
}
