-- Every command queued in the outbox is announced at commit on the channel
-- `hitl_bridge_outbox` as "<schema> <session_id> <outbox id>": the replica holding the
-- session's connection sends it at once instead of at its next count of the outbox
-- (once a second, which stays as the safety net). The schema tells deployments on one
-- database apart.
CREATE FUNCTION hitl_bridge_outbox_notify() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('hitl_bridge_outbox', current_schema() || ' ' || NEW.session_id || ' ' || NEW.id);
    RETURN NEW;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH ROW EXECUTE FUNCTION hitl_bridge_outbox_notify();
