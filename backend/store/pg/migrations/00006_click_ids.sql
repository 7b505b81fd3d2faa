-- Each click gets the id the server gave it, unique: a click recorded
-- again under its id (shipped from a replica's spool after Postgres came
-- back, or after a commit whose answer was lost) is found and not counted
-- twice. Clicks recorded before have none (NULL, which the unique index
-- lets be many). adlink_record_click takes the id as its last argument.
-- A beacon's impressions shipped from a spool are recorded under their
-- batch's id, once: impression_batches holds the ids for a week.

-- +goose Up
ALTER TABLE clicks ADD COLUMN click_id text;
CREATE UNIQUE INDEX clicks_click_id ON clicks (click_id);
DROP FUNCTION adlink_record_click;

CREATE TABLE impression_batches (
    id    text   PRIMARY KEY,
    at_ns bigint NOT NULL
);
CREATE INDEX impression_batches_at ON impression_batches (at_ns);

-- +goose StatementBegin
CREATE FUNCTION adlink_record_click(
    p_at bigint, p_ad_id text, p_ad_type text, p_context text, p_api_key text, p_site_id text, p_criterion text,
    p_yk_tag text, p_ip text, p_user_agent text, p_country text, p_advertiser text, p_bid bigint, p_currency text,
    p_reason text, p_network text, p_decision text, p_expires bigint, p_limit integer, p_budget bigint,
    p_day bigint, p_periods bigint[], p_dims text[], p_reasons text[], p_window bigint, p_forget bigint,
    p_click_id text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    reason   text := p_reason;
    spent    bigint;
    n        bigint;
    inserted integer;
    unbilled bigint[];
    i        integer;
    bill     boolean;
    prior    text;
BEGIN
    IF p_click_id <> '' THEN
        -- Recorded before (a click shipped again after a crash between
        -- its commit and its removal from a spool): its verdict stands,
        -- and nothing is written twice.
        SELECT c.reason INTO prior FROM clicks c WHERE c.click_id = p_click_id;
        IF FOUND THEN
            RETURN prior;
        END IF;
    END IF;
    IF reason = '' AND p_budget > 0 THEN
        -- The advertiser's clicks of the day take turns to the commit.
        PERFORM pg_advisory_xact_lock(1633971298, hashtext(p_advertiser || '/' || p_day::text));
        SELECT coalesce(sum(micros), 0) INTO spent FROM spend WHERE advertiser = p_advertiser AND day = p_day;
        IF spent >= p_budget THEN
            reason := 'over_budget';
        END IF;
    END IF;
    IF reason = '' AND p_decision <> '' THEN
        IF p_at >= p_expires THEN
            reason := 'repeat';
        ELSE
            INSERT INTO decisions (id, expires_ns) VALUES (p_decision, p_expires) ON CONFLICT (id) DO NOTHING;
            GET DIAGNOSTICS inserted = ROW_COUNT;
            IF inserted = 0 THEN
                reason := 'repeat';
            ELSIF random() < 1.0 / 1024 THEN
                DELETE FROM decisions WHERE expires_ns < p_forget;
            END IF;
        END IF;
    END IF;
    IF reason = '' THEN
        -- The network's claims take turns to the commit.
        PERFORM pg_advisory_xact_lock(1633971307, hashtext(p_network));
        IF EXISTS (SELECT 1 FROM window_claims WHERE network = p_network AND ad_id = p_ad_id
                   AND at_ns > p_at - p_window AND at_ns < p_at + p_window) THEN
            reason := 'repeat';
        ELSE
            SELECT count(*) INTO n FROM window_claims WHERE network = p_network AND day = p_day;
            IF p_limit > 0 AND n >= p_limit THEN
                reason := 'network_cap';
            ELSE
                INSERT INTO window_claims (network, ad_id, at_ns, day) VALUES (p_network, p_ad_id, p_at, p_day);
                DELETE FROM window_claims WHERE network = p_network AND at_ns < p_at - 3 * 86400000000000;
            END IF;
        END IF;
    END IF;
    bill := reason = '';
    -- A concurrent transaction that recorded the same id first makes this
    -- insert fail on the unique index, and this transaction with it.
    INSERT INTO clicks (at_ns, ad_id, ad_type, context, api_key, site_id, criterion, yk_tag, ip, user_agent, country,
                        advertiser, bid_micros, currency, billable, reason, click_id)
    VALUES (p_at, p_ad_id, p_ad_type, p_context, p_api_key, p_site_id, p_criterion, p_yk_tag, p_ip, p_user_agent,
            p_country, p_advertiser, p_bid, p_currency, bill, reason, NULLIF(p_click_id, ''));
    unbilled := array_fill(0::bigint, ARRAY[array_length(p_reasons, 1)]);
    i := array_position(p_reasons, reason);
    IF NOT bill AND i IS NOT NULL THEN
        unbilled[i] := 1;
    END IF;
    FOR g IN 0..array_length(p_periods, 1) - 1 LOOP
        INSERT INTO rollups (grain, shard, period, api_key, site_id, advertiser, ad_id, context, currency, criterion,
                             yk_tag, country, impressions, clicks, billable, spend_micros, unbilled)
        VALUES (g, pg_backend_pid() % 16, p_periods[g + 1], p_dims[g * 9 + 1], p_dims[g * 9 + 2], p_dims[g * 9 + 3],
                p_dims[g * 9 + 4], p_dims[g * 9 + 5], p_dims[g * 9 + 6], p_dims[g * 9 + 7], p_dims[g * 9 + 8],
                p_dims[g * 9 + 9], 0, 1, CASE WHEN bill THEN 1 ELSE 0 END, CASE WHEN bill THEN p_bid ELSE 0 END, unbilled)
        ON CONFLICT (grain, period, api_key, site_id, advertiser, ad_id, context, currency, criterion, yk_tag, country, shard)
        DO UPDATE SET clicks = rollups.clicks + 1, billable = rollups.billable + EXCLUDED.billable,
            spend_micros = rollups.spend_micros + EXCLUDED.spend_micros,
            unbilled = ARRAY(SELECT coalesce(a, 0) + coalesce(b, 0)
                FROM unnest(rollups.unbilled, EXCLUDED.unbilled) WITH ORDINALITY AS u(a, b, o) ORDER BY o);
    END LOOP;
    IF bill AND p_bid <> 0 THEN
        INSERT INTO spend (advertiser, day, shard, micros) VALUES (p_advertiser, p_day, pg_backend_pid() % 16, p_bid)
        ON CONFLICT (advertiser, day, shard) DO UPDATE SET micros = spend.micros + EXCLUDED.micros;
    END IF;
    RETURN reason;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP TABLE impression_batches;
DROP FUNCTION adlink_record_click;
DROP INDEX clicks_click_id;
ALTER TABLE clicks DROP COLUMN click_id;

-- +goose StatementBegin
CREATE FUNCTION adlink_record_click(
    p_at bigint, p_ad_id text, p_ad_type text, p_context text, p_api_key text, p_site_id text, p_criterion text,
    p_yk_tag text, p_ip text, p_user_agent text, p_country text, p_advertiser text, p_bid bigint, p_currency text,
    p_reason text, p_network text, p_decision text, p_expires bigint, p_limit integer, p_budget bigint,
    p_day bigint, p_periods bigint[], p_dims text[], p_reasons text[], p_window bigint, p_forget bigint)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    reason   text := p_reason;
    spent    bigint;
    n        bigint;
    inserted integer;
    unbilled bigint[];
    i        integer;
    bill     boolean;
BEGIN
    IF reason = '' AND p_budget > 0 THEN
        -- The advertiser's clicks of the day take turns to the commit.
        PERFORM pg_advisory_xact_lock(1633971298, hashtext(p_advertiser || '/' || p_day::text));
        SELECT coalesce(sum(micros), 0) INTO spent FROM spend WHERE advertiser = p_advertiser AND day = p_day;
        IF spent >= p_budget THEN
            reason := 'over_budget';
        END IF;
    END IF;
    IF reason = '' AND p_decision <> '' THEN
        IF p_at >= p_expires THEN
            reason := 'repeat';
        ELSE
            INSERT INTO decisions (id, expires_ns) VALUES (p_decision, p_expires) ON CONFLICT (id) DO NOTHING;
            GET DIAGNOSTICS inserted = ROW_COUNT;
            IF inserted = 0 THEN
                reason := 'repeat';
            ELSIF random() < 1.0 / 1024 THEN
                DELETE FROM decisions WHERE expires_ns < p_forget;
            END IF;
        END IF;
    END IF;
    IF reason = '' THEN
        -- The network's claims take turns to the commit.
        PERFORM pg_advisory_xact_lock(1633971307, hashtext(p_network));
        IF EXISTS (SELECT 1 FROM window_claims WHERE network = p_network AND ad_id = p_ad_id
                   AND at_ns > p_at - p_window AND at_ns < p_at + p_window) THEN
            reason := 'repeat';
        ELSE
            SELECT count(*) INTO n FROM window_claims WHERE network = p_network AND day = p_day;
            IF p_limit > 0 AND n >= p_limit THEN
                reason := 'network_cap';
            ELSE
                INSERT INTO window_claims (network, ad_id, at_ns, day) VALUES (p_network, p_ad_id, p_at, p_day);
                DELETE FROM window_claims WHERE network = p_network AND at_ns < p_at - 3 * 86400000000000;
            END IF;
        END IF;
    END IF;
    bill := reason = '';
    INSERT INTO clicks (at_ns, ad_id, ad_type, context, api_key, site_id, criterion, yk_tag, ip, user_agent, country,
                        advertiser, bid_micros, currency, billable, reason)
    VALUES (p_at, p_ad_id, p_ad_type, p_context, p_api_key, p_site_id, p_criterion, p_yk_tag, p_ip, p_user_agent,
            p_country, p_advertiser, p_bid, p_currency, bill, reason);
    unbilled := array_fill(0::bigint, ARRAY[array_length(p_reasons, 1)]);
    i := array_position(p_reasons, reason);
    IF NOT bill AND i IS NOT NULL THEN
        unbilled[i] := 1;
    END IF;
    FOR g IN 0..array_length(p_periods, 1) - 1 LOOP
        INSERT INTO rollups (grain, shard, period, api_key, site_id, advertiser, ad_id, context, currency, criterion,
                             yk_tag, country, impressions, clicks, billable, spend_micros, unbilled)
        VALUES (g, pg_backend_pid() % 16, p_periods[g + 1], p_dims[g * 9 + 1], p_dims[g * 9 + 2], p_dims[g * 9 + 3],
                p_dims[g * 9 + 4], p_dims[g * 9 + 5], p_dims[g * 9 + 6], p_dims[g * 9 + 7], p_dims[g * 9 + 8],
                p_dims[g * 9 + 9], 0, 1, CASE WHEN bill THEN 1 ELSE 0 END, CASE WHEN bill THEN p_bid ELSE 0 END, unbilled)
        ON CONFLICT (grain, period, api_key, site_id, advertiser, ad_id, context, currency, criterion, yk_tag, country, shard)
        DO UPDATE SET clicks = rollups.clicks + 1, billable = rollups.billable + EXCLUDED.billable,
            spend_micros = rollups.spend_micros + EXCLUDED.spend_micros,
            unbilled = ARRAY(SELECT coalesce(a, 0) + coalesce(b, 0)
                FROM unnest(rollups.unbilled, EXCLUDED.unbilled) WITH ORDINALITY AS u(a, b, o) ORDER BY o);
    END LOOP;
    IF bill AND p_bid <> 0 THEN
        INSERT INTO spend (advertiser, day, shard, micros) VALUES (p_advertiser, p_day, pg_backend_pid() % 16, p_bid)
        ON CONFLICT (advertiser, day, shard) DO UPDATE SET micros = spend.micros + EXCLUDED.micros;
    END IF;
    RETURN reason;
END
$$;
-- +goose StatementEnd
