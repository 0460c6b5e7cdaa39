//! `Artifact`: a file about a run (an adapter's stderr, its transcript),
//! kept in a failing seed's report folder.

use std::borrow::Cow;
use std::sync::Arc;

/// A file about a run, kept in a failing seed's report folder.
#[derive(Clone)]
pub struct Artifact {
    /// A relative path such as `adapter/writer-3.1.stderr`.
    pub name: String,
    content: Content,
}

#[derive(Clone)]
enum Content {
    Bytes(Vec<u8>),
    /// Rendered when read. Most seeds pass and keep nothing, and rendering
    /// an adapter's transcript (thousands of exchanges) cost a fifth of
    /// crashsim's own time per seed when it was done for every seed.
    Deferred(Arc<dyn Fn() -> Vec<u8> + Send + Sync>),
}

impl Artifact {
    pub fn new(name: impl Into<String>, content: Vec<u8>) -> Artifact {
        Artifact {
            name: name.into(),
            content: Content::Bytes(content),
        }
    }

    /// An artifact whose content `render` makes each time it is read.
    pub fn deferred(name: impl Into<String>, render: impl Fn() -> Vec<u8> + Send + Sync + 'static) -> Artifact {
        Artifact {
            name: name.into(),
            content: Content::Deferred(Arc::new(render)),
        }
    }

    pub fn content(&self) -> Cow<'_, [u8]> {
        match &self.content {
            Content::Bytes(bytes) => Cow::Borrowed(bytes),
            Content::Deferred(render) => Cow::Owned(render()),
        }
    }
}

impl std::fmt::Debug for Artifact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let content = match &self.content {
            Content::Bytes(bytes) => format!("{} bytes", bytes.len()),
            Content::Deferred(_) => "deferred".to_string(),
        };
        f.debug_struct("Artifact")
            .field("name", &self.name)
            .field("content", &content)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn a_deferred_artifact_is_rendered_only_when_read() {
        let renders = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&renders);
        let artifact = Artifact::deferred("adapter/transcript.jsonl", move || {
            counted.fetch_add(1, Ordering::SeqCst);
            b"{}\n".to_vec()
        });
        let kept = artifact.clone();
        assert_eq!(
            format!("{artifact:?}"),
            r#"Artifact { name: "adapter/transcript.jsonl", content: "deferred" }"#
        );
        assert_eq!(
            renders.load(Ordering::SeqCst),
            0,
            "made, cloned and printed: not rendered"
        );
        assert_eq!(&*kept.content(), b"{}\n");
        assert_eq!(renders.load(Ordering::SeqCst), 1);
        drop((artifact, kept));
        assert_eq!(renders.load(Ordering::SeqCst), 1, "dropped unread: rendered no more");
    }

    #[test]
    fn bytes_are_handed_back_as_they_came() {
        let artifact = Artifact::new("adapter/writer-0.0.stderr", b"boom\n".to_vec());
        assert!(matches!(artifact.content(), Cow::Borrowed(b"boom\n")));
        assert_eq!(
            format!("{artifact:?}"),
            r#"Artifact { name: "adapter/writer-0.0.stderr", content: "5 bytes" }"#
        );
    }
}
