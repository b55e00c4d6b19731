//! A turn's tool work as one evolving status line per group, for the connectors whose
//! backends report tool calls one by one (LangGraph, Kimi, Agno, Claude Code): a group
//! opens at the first tool call, each result marks its tool done or failed, and the
//! connector closes the group when the model talks again, at a request (seed 000 shows
//! requests outside groups) or at the end of the turn. Kept per session, so group
//! numbers never repeat within a chat.

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

    /// Closes the open group for good: a tool still running then never reports, so it
    /// is shown failed.
    pub fn close_abandoning_running(&mut self) -> Option<SessionUpdate> {
        for tool in self.open.iter_mut().flat_map(|g| g.tools.iter_mut()).filter(|t| t.state == ToolState::Running) {
            tool.state = ToolState::Failed;
        }
        self.close()
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

    #[test]
    fn closing_for_good_fails_what_still_runs() {
        let mut groups = ToolGroups::default();
        groups.started("t1", "Bash");
        groups.started("t2", "Read");
        groups.finished("t2", false);
        assert_eq!(line(groups.close_abandoning_running()), "1⚙ tools: Bash ✗, Read ✓");
    }
}
