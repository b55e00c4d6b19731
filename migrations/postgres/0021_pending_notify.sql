-- Every request stored pending is announced at commit on the channel
-- `hitl_bridge_pending` as "<schema> <id>": every replica reads its deadline and
-- escalation step and watches them at once, instead of at its next rescan (every
-- 10 s, which stays as the safety net). A pending request's deadline column never
-- changes afterwards (a policy's later steps are read when they come due). The schema
-- tells deployments on one database apart.
CREATE FUNCTION hitl_bridge_pending_notify() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('hitl_bridge_pending', current_schema() || ' ' || NEW.id);
    RETURN NEW;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER interactions_pending_notify AFTER INSERT ON interactions
    FOR EACH ROW WHEN (NEW.status = 'pending') EXECUTE FUNCTION hitl_bridge_pending_notify();
