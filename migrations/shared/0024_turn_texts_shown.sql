-- How many of the agent's texts of the open turn the chats have shown. After a
-- restart, the texts the backend's history holds beyond them are relayed once (the
-- agent's last words written while no bridge listened).
ALTER TABLE open_turns ADD COLUMN texts_shown BIGINT NOT NULL DEFAULT 0;
