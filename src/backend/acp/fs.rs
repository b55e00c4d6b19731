//! The file system an ACP agent may use through the bridge when `acp.allow_fs` is on:
//! `fs/read_text_file` and `fs/write_text_file`, confined to the session's work
//! directory. A path outside it (directly, through `..` or through a symbolic link) is
//! refused, and so is everything when the setting is off (the bridge then never
//! offered the capability).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// Answers one `fs/*` request: its result, or the error message the agent gets.
pub async fn serve(method: &str, params: &Value, root: &Path) -> Result<Value, String> {
    let path = params.get("path").and_then(Value::as_str).ok_or("no path")?;
    match method {
        "fs/read_text_file" => {
            let file = inside(root, Path::new(path)).await?;
            let text = tokio::fs::read_to_string(&file).await.map_err(|e| format!("cannot read {path}: {e}"))?;
            let from = params.get("line").and_then(Value::as_u64).unwrap_or(1).max(1) as usize - 1;
            let limit = params.get("limit").and_then(Value::as_u64).map(|l| l as usize);
            let content = match (from, limit) {
                (0, None) => text,
                _ => text.split_inclusive('\n').skip(from).take(limit.unwrap_or(usize::MAX)).collect(),
            };
            Ok(json!({"content":content}))
        }
        "fs/write_text_file" => {
            let content = params.get("content").and_then(Value::as_str).ok_or("no content")?;
            let target = Path::new(path);
            let parent = target.parent().ok_or("no directory")?;
            let dir = inside(root, parent).await?;
            let name = target.file_name().ok_or("no file name")?;
            let file = dir.join(name);
            // A symbolic link in the last place would lead the write outside.
            if tokio::fs::symlink_metadata(&file).await.is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(format!("{path} is a symbolic link; not writing through it"));
            }
            tokio::fs::write(&file, content).await.map_err(|e| format!("cannot write {path}: {e}"))?;
            Ok(Value::Null)
        }
        other => Err(format!("hitl-bridge does not serve {other}")),
    }
}

/// `path` (absolute, as ACP requires) resolved, when it lies inside `root`.
async fn inside(root: &Path, path: &Path) -> Result<PathBuf, String> {
    if !path.is_absolute() {
        return Err(format!("{} is not an absolute path", path.display()));
    }
    let root = tokio::fs::canonicalize(root).await.map_err(|e| format!("the work directory cannot be read: {e}"))?;
    let resolved = tokio::fs::canonicalize(path).await.map_err(|e| format!("{}: {e}", path.display()))?;
    if resolved.starts_with(&root) { Ok(resolved) } else { Err(format!("{} is outside the agent's work directory", path.display())) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reads_and_writes_inside_the_work_dir_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("work");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("a.txt"), "one\ntwo\nthree\n").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "no").unwrap();
        let a = root.join("a.txt").display().to_string();
        assert_eq!(serve("fs/read_text_file", &json!({"path":a}), &root).await, Ok(json!({"content":"one\ntwo\nthree\n"})));
        assert_eq!(serve("fs/read_text_file", &json!({"path":a,"line":2,"limit":1}), &root).await, Ok(json!({"content":"two\n"})));
        let b = root.join("b.txt").display().to_string();
        assert_eq!(serve("fs/write_text_file", &json!({"path":b,"content":"new"}), &root).await, Ok(Value::Null));
        assert_eq!(std::fs::read_to_string(root.join("b.txt")).unwrap(), "new");

        let escape = root.join("../secret.txt").display().to_string();
        assert!(serve("fs/read_text_file", &json!({"path":escape}), &root).await.unwrap_err().contains("outside"));
        let out = dir.path().join("out.txt").display().to_string();
        assert!(serve("fs/write_text_file", &json!({"path":out,"content":"x"}), &root).await.unwrap_err().contains("outside"));
        assert!(!dir.path().join("out.txt").exists());
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("link.txt")).unwrap();
        let link = root.join("link.txt").display().to_string();
        assert!(serve("fs/read_text_file", &json!({"path":link}), &root).await.unwrap_err().contains("outside"));
        assert!(serve("fs/write_text_file", &json!({"path":link,"content":"x"}), &root).await.unwrap_err().contains("symbolic link"));
        assert_eq!(std::fs::read_to_string(dir.path().join("secret.txt")).unwrap(), "no");
        assert!(serve("fs/read_text_file", &json!({"path":"a.txt"}), &root).await.unwrap_err().contains("absolute"));
    }
}
