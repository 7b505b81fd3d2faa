-- A replica reads back only the removed_ads rows written since its last
-- read: each row's seq is drawn from a sequence at every insert and
-- update, by a trigger, so that the rows replicas of an older adlink
-- write (which know no seq) get one too. The trigger first takes a
-- transaction advisory lock, which makes the writers of removed_ads take
-- turns to their commits: a row of a higher seq is never visible before
-- one of a lower, and a reader that saw seq n has missed none below it.

-- +goose Up
CREATE SEQUENCE removed_ads_seqs;
ALTER TABLE removed_ads ADD COLUMN seq bigint NOT NULL DEFAULT nextval('removed_ads_seqs');
ALTER SEQUENCE removed_ads_seqs OWNED BY removed_ads.seq;
CREATE INDEX removed_ads_by_seq ON removed_ads (seq);

-- +goose StatementBegin
CREATE FUNCTION adlink_removed_ads_seq() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- "adrm": the writers' turn, held to the commit.
    PERFORM pg_advisory_xact_lock(1633972845, hashtext(TG_TABLE_SCHEMA));
    NEW.seq := nextval('removed_ads_seqs');
    RETURN NEW;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER removed_ads_seq BEFORE INSERT OR UPDATE ON removed_ads
    FOR EACH ROW EXECUTE FUNCTION adlink_removed_ads_seq();

-- +goose Down
DROP TRIGGER removed_ads_seq ON removed_ads;
DROP FUNCTION adlink_removed_ads_seq();
ALTER TABLE removed_ads DROP COLUMN seq;
