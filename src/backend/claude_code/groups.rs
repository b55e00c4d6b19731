//! The tool work of a Claude Code turn as one evolving status line per group: a group
//! opens at the first tool call the model makes, each `tool_result` marks its tool
//! done or failed, and the group closes at the end of the turn or before a question
//! (seed 000 shows questions outside groups). Kept per session across process
//! restarts, so group numbers never repeat within a chat.

use crate::backend::{SessionUpdate, ToolGroupStatus, ToolRun, ToolState};

#[derive(Debug, Default)]
pub struct ToolGroups {
    open: Option<ToolGroupStatus>,
    seen: u64,
}

impl ToolGroups {
    /// The model called tool `name` (`id` is its tool_use id).
    pub fn started(&mut self, id: &str, name: &str) -> SessionUpdate {
        let seen = &mut self.seen;
        let group = self.open.get_or_insert_with(|| {
            *seen += 1;
            ToolGroupStatus { group: *seen, summary: None, tools: Vec::new(), finished: false }
        });
        if !group.tools.iter().any(|t| t.id == id) {
            group.tools.push(ToolRun { id: id.to_owned(), name: name.to_owned(), state: ToolState::Running });
        }
        SessionUpdate::ToolGroup(group.clone())
    }

    /// The tool `id` returned; `None` when it is not in the open group.
    pub fn finished(&mut self, id: &str, failed: bool) -> Option<SessionUpdate> {
        let group = self.open.as_mut()?;
        let tool = group.tools.iter_mut().find(|t| t.id == id)?;
        tool.state = if failed { ToolState::Failed } else { ToolState::Done };
        Some(SessionUpdate::ToolGroup(group.clone()))
    }

    /// Closes the open group, if any.
    pub fn close(&mut self) -> Option<SessionUpdate> {
        let mut group = self.open.take()?;
        group.finished = true;
        Some(SessionUpdate::ToolGroup(group))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(update: Option<SessionUpdate>) -> String {
        match update {
            Some(SessionUpdate::ToolGroup(g)) => format!("{}{}", g.group, g.line()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_group_collects_tools_until_closed_and_the_next_one_is_numbered_on() {
        let mut groups = ToolGroups::default();
        assert_eq!(line(Some(groups.started("t1", "Bash"))), "1⚙ tools: Bash …");
        assert_eq!(line(Some(groups.started("t2", "Write"))), "1⚙ tools: Bash …, Write …");
        assert_eq!(line(groups.finished("t1", false)), "1⚙ tools: Bash ✓, Write …");
        assert_eq!(line(groups.finished("t2", true)), "1⚙ tools: Bash ✓, Write ✗");
        assert!(groups.finished("unknown", false).is_none());
        assert!(matches!(groups.close(), Some(SessionUpdate::ToolGroup(g)) if g.finished));
        assert!(groups.close().is_none());
        assert_eq!(line(Some(groups.started("t3", "Read"))), "2⚙ tools: Read …");
    }
}
