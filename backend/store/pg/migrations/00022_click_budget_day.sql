-- Each billed click keeps the day of its advertiser's budget it was
-- billed on (budget_day, the days from 1970-01-01 to its date in the
-- budget's time zone then), so that a credit of it (adlink invalidate)
-- takes its bid off that day's spend even after the advertiser's zone
-- changed. adlink_record_clicks of 00019 is replaced, with the same
-- arguments, by one that fills the column from p_budget_day. Clicks
-- recorded before, not billed, or by a server of a version before this
-- one, have none (NULL): a credit counts their day in the zone the
-- advertisers file gives the budget now. Adding a column without a
-- default rewrites no row.

-- +goose Up
ALTER TABLE clicks ADD COLUMN budget_day bigint;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION adlink_record_clicks(
    p_at bigint[], p_ad_id text[], p_ad_type text[], p_context text[], p_api_key text[], p_site_id text[],
    p_criterion text[], p_yk_tag text[], p_ip text[], p_user_agent text[], p_country text[], p_advertiser text[],
    p_bid bigint[], p_currency text[], p_reason text[], p_network text[], p_decision text[], p_expires bigint[],
    p_limit integer[], p_budget bigint[], p_hour bigint[], p_day bigint[], p_forget bigint[], p_click_id text[],
    p_grains smallint[], p_hourly boolean[], p_keeps boolean[], p_reasons text[], p_window bigint,
    p_prefix text[], p_prefix_limit integer[], p_prefix_ad_limit integer[], p_budget_day bigint[])
RETURNS text[] LANGUAGE plpgsql
-- A plan made for one batch's arrays serves the next: planned again for
-- each call, the statements cost about twice as much.
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    n        integer := coalesce(array_length(p_at, 1), 0);
    reasons  text[];
    prior    text[];
    fresh    boolean[];
    used     text[];
    spent_of text[] := '{}';
    spent_by bigint[] := '{}';
    reason   text;
    spent    bigint;
    claims   bigint;
    inserted integer;
    j        integer;
    k        text;
    at_shard integer := pg_backend_pid() % 16;
BEGIN
    IF n = 0 THEN
        RETURN '{}';
    END IF;
    -- Each id looked up by the index, whatever plan was cached for the
    -- table when it was small.
    SELECT array_agg(x.prior ORDER BY x.o), array_agg(x.prior IS NULL ORDER BY x.o),
           array_agg(coalesce(x.prior, x.r) ORDER BY x.o)
    INTO prior, fresh, reasons
    FROM (SELECT u.o, u.r, (SELECT c.reason FROM clicks c WHERE c.click_id = u.id) AS prior
          FROM unnest(p_click_id, p_reason) WITH ORDINALITY AS u(id, r, o)) AS x;
    -- The prefixes' claims take turns to the commit, locked first and in
    -- the order of their locks' keys (two names may share one), before
    -- any network's or advertiser's lock. One lock covers a prefix's
    -- counts on all ads and on each.
    PERFORM pg_advisory_xact_lock(1633971312, x.h)
    FROM (SELECT DISTINCT hashtext(u.pre) AS h
          FROM unnest(reasons, fresh, p_prefix, p_prefix_limit, p_prefix_ad_limit) AS u(r, f, pre, lim, alim)
          WHERE u.f AND u.r = '' AND u.pre <> '' AND (u.lim > 0 OR u.alim > 0) ORDER BY 1) AS x;
    IF NOT EXISTS (SELECT 1 FROM unnest(p_click_id) AS x(id) WHERE x.id <> '' GROUP BY x.id HAVING count(*) > 1)
       AND NOT EXISTS (SELECT 1 FROM unnest(reasons, fresh, p_decision) AS x(r, f, id)
                       WHERE x.f AND x.r = '' AND x.id <> '' GROUP BY x.id HAVING count(*) > 1)
       AND NOT EXISTS (SELECT 1 FROM unnest(reasons, fresh, p_network) AS x(r, f, net)
                       WHERE x.f AND x.r = '' GROUP BY x.net HAVING count(*) > 1)
       AND NOT EXISTS (SELECT 1 FROM unnest(reasons, fresh, p_advertiser, p_budget_day, p_budget, p_bid) AS x(r, f, adv, day, budget, bid)
                       WHERE x.f AND x.r = '' AND (x.budget > 0 OR x.bid <> 0)
                       GROUP BY x.adv, x.day HAVING count(*) > 1 AND max(x.budget) > 0) THEN
        IF 0 < ANY (p_budget) THEN
            -- The advertisers' clicks of the day take turns to the commit.
            PERFORM pg_advisory_xact_lock(1633971298, hashtext(x.k))
            FROM (SELECT u.adv || '/' || u.day::text AS k
                  FROM unnest(reasons, fresh, p_advertiser, p_budget_day, p_budget) AS u(r, f, adv, day, budget)
                  WHERE u.f AND u.r = '' AND u.budget > 0 ORDER BY (u.adv || '/' || u.day::text) COLLATE "C") AS x;
            reasons := ARRAY(SELECT CASE WHEN u.f AND u.r = '' AND u.budget > 0 AND (SELECT coalesce(sum(s.micros), 0)
                                             FROM spend s WHERE s.advertiser = u.adv AND s.day = u.day) >= u.budget
                                         THEN 'over_budget' ELSE u.r END
                             FROM unnest(reasons, fresh, p_advertiser, p_budget_day, p_budget)
                                  WITH ORDINALITY AS u(r, f, adv, day, budget, o)
                             ORDER BY u.o);
        END IF;
        WITH ins AS (
            INSERT INTO decisions (id, expires_ns)
            SELECT u.id, u.expires FROM unnest(reasons, fresh, p_decision, p_at, p_expires) AS u(r, f, id, at, expires)
            WHERE u.f AND u.r = '' AND u.id <> '' AND u.at < u.expires ORDER BY u.id COLLATE "C"
            ON CONFLICT (id) DO NOTHING RETURNING id)
        SELECT coalesce(array_agg(ins.id), '{}') INTO used FROM ins;
        IF random() < cardinality(used) / 1024.0 THEN
            DELETE FROM decisions WHERE expires_ns < (SELECT min(x) FROM unnest(p_forget) AS x);
        END IF;
        -- A click not refused yet is judged by its network's windows; the
        -- networks' claims take turns to the commit, locked in the order
        -- of their names, as the server orders a batch.
        PERFORM pg_advisory_xact_lock(1633971307, hashtext(x.net))
        FROM (SELECT u.net FROM unnest(reasons, fresh, p_network, p_decision, p_at, p_expires)
                                AS u(r, f, net, id, at, expires)
              WHERE u.f AND u.r = '' AND (u.id = '' OR (u.at < u.expires AND u.id = ANY (used)))
              ORDER BY u.net COLLATE "C") AS x;
        -- The verdicts, the claims of the clicks that bill, and the end of
        -- what no later claim can be judged by (claims older than three
        -- days before the batch's first click): one statement, which
        -- sees the claims as they were before it.
        WITH w AS (
            SELECT u.o, u.f, u.net, u.ad, u.at, u.day, u.pre, u.plim, u.alim, CASE
                WHEN NOT (u.f AND u.r = '') THEN u.r
                WHEN u.id <> '' AND (u.at >= u.expires OR NOT u.id = ANY (used)) THEN 'repeat'
                WHEN EXISTS (SELECT 1 FROM window_claims w WHERE w.network = u.net AND w.ad_id = u.ad
                             AND w.at_ns > u.at - p_window AND w.at_ns < u.at + p_window) THEN 'repeat'
                WHEN u.lim > 0 AND (SELECT count(*) FROM window_claims w WHERE w.network = u.net AND w.day = u.day) >= u.lim
                    THEN 'network_cap'
                ELSE '' END AS r
            FROM unnest(reasons, fresh, p_decision, p_expires, p_network, p_ad_id, p_at, p_limit, p_day, p_prefix,
                        p_prefix_limit, p_prefix_ad_limit)
                 WITH ORDINALITY AS u(r, f, id, expires, net, ad, at, lim, day, pre, plim, alim, o)),
        -- A click its network lets bill is prefix_ad_cap when its prefix's
        -- count on its ad of the day, with the batch's clicks of the
        -- prefix on the ad before it and itself, passes the cap per ad;
        -- then, of the clicks left, prefix_cap when the prefix's count of
        -- the day so passes the cap on all ads: the clicks of one prefix
        -- are counted in the batch's order. The clicks that bill are those
        -- the loop below would bill; once the prefix had its cap, a later
        -- click of an ad whose clicks it refused may be given either reason.
        a AS (
            SELECT w.o, w.f, w.net, w.ad, w.at, w.day, w.pre, w.plim, w.alim, CASE
                WHEN w.f AND w.r = '' AND w.alim > 0 AND w.pre <> ''
                     AND coalesce((SELECT p.clicks FROM prefix_ad_clicks p
                                    WHERE p.prefix = w.pre AND p.ad_id = w.ad AND p.day = w.day), 0)
                         + count(*) FILTER (WHERE w.f AND w.r = '' AND w.alim > 0)
                               OVER (PARTITION BY w.pre, w.ad, w.day ORDER BY w.o) > w.alim
                    THEN 'prefix_ad_cap'
                ELSE w.r END AS r
            FROM w),
        v AS (
            SELECT a.o, a.f, a.net, a.ad, a.at, a.day, a.pre, a.plim, a.alim, CASE
                WHEN a.f AND a.r = '' AND a.plim > 0 AND a.pre <> ''
                     AND coalesce((SELECT p.clicks FROM prefix_clicks p WHERE p.prefix = a.pre AND p.day = a.day), 0)
                         + count(*) FILTER (WHERE a.f AND a.r = '' AND a.plim > 0)
                               OVER (PARTITION BY a.pre, a.day ORDER BY a.o) > a.plim
                    THEN 'prefix_cap'
                ELSE a.r END AS r
            FROM a),
        claimed AS (
            INSERT INTO window_claims (network, ad_id, at_ns, day)
            SELECT v.net, v.ad, v.at, v.day FROM v WHERE v.f AND v.r = ''),
        counted AS (
            INSERT INTO prefix_clicks (prefix, day, clicks)
            SELECT v.pre, v.day, count(*) FROM v WHERE v.f AND v.r = '' AND v.pre <> '' AND v.plim > 0
            GROUP BY v.pre, v.day ORDER BY v.pre COLLATE "C", v.day
            ON CONFLICT (prefix, day) DO UPDATE SET clicks = prefix_clicks.clicks + EXCLUDED.clicks),
        counted_ads AS (
            INSERT INTO prefix_ad_clicks (prefix, ad_id, day, clicks)
            SELECT v.pre, v.ad, v.day, count(*) FROM v WHERE v.f AND v.r = '' AND v.pre <> '' AND v.alim > 0
            GROUP BY v.pre, v.ad, v.day ORDER BY v.pre COLLATE "C", v.ad COLLATE "C", v.day
            ON CONFLICT (prefix, ad_id, day) DO UPDATE SET clicks = prefix_ad_clicks.clicks + EXCLUDED.clicks),
        forgotten AS (
            DELETE FROM window_claims w
            WHERE w.network = ANY (ARRAY(SELECT v.net FROM v WHERE v.f AND v.r = ''))
              AND w.at_ns < (SELECT min(x) FROM unnest(p_at) AS x) - 3 * 86400000000000)
        SELECT array_agg(v.r ORDER BY v.o) INTO reasons FROM v;
    ELSE
        FOR i IN 1..n LOOP
            IF prior[i] IS NOT NULL THEN
                reasons[i] := prior[i];
                fresh[i] := false;
                CONTINUE;
            END IF;
            IF p_click_id[i] <> '' THEN
                j := array_position(p_click_id, p_click_id[i]);
                IF j < i THEN
                    reasons[i] := reasons[j];
                    fresh[i] := false;
                    CONTINUE;
                END IF;
            END IF;
            reason := p_reason[i];
            k := p_advertiser[i] || '/' || p_budget_day[i]::text;
            IF reason = '' AND p_budget[i] > 0 THEN
                -- The advertiser's clicks of the day take turns to the commit.
                PERFORM pg_advisory_xact_lock(1633971298, hashtext(k));
                SELECT coalesce(sum(micros), 0) INTO spent FROM spend WHERE advertiser = p_advertiser[i] AND day = p_budget_day[i];
                j := array_position(spent_of, k);
                IF j IS NOT NULL THEN
                    spent := spent + spent_by[j];
                END IF;
                IF spent >= p_budget[i] THEN
                    reason := 'over_budget';
                END IF;
            END IF;
            IF reason = '' AND p_decision[i] <> '' THEN
                IF p_at[i] >= p_expires[i] THEN
                    reason := 'repeat';
                ELSE
                    INSERT INTO decisions (id, expires_ns) VALUES (p_decision[i], p_expires[i]) ON CONFLICT (id) DO NOTHING;
                    GET DIAGNOSTICS inserted = ROW_COUNT;
                    IF inserted = 0 THEN
                        reason := 'repeat';
                    ELSIF random() < 1.0 / 1024 THEN
                        DELETE FROM decisions WHERE expires_ns < p_forget[i];
                    END IF;
                END IF;
            END IF;
            IF reason = '' THEN
                -- The network's claims take turns to the commit.
                PERFORM pg_advisory_xact_lock(1633971307, hashtext(p_network[i]));
                IF EXISTS (SELECT 1 FROM window_claims WHERE network = p_network[i] AND ad_id = p_ad_id[i]
                           AND at_ns > p_at[i] - p_window AND at_ns < p_at[i] + p_window) THEN
                    reason := 'repeat';
                ELSE
                    claims := 0;
                    IF p_limit[i] > 0 THEN
                        SELECT count(*) INTO claims FROM window_claims WHERE network = p_network[i] AND day = p_day[i];
                    END IF;
                    IF p_limit[i] > 0 AND claims >= p_limit[i] THEN
                        reason := 'network_cap';
                    ELSIF p_prefix[i] <> '' AND p_prefix_ad_limit[i] > 0
                          AND coalesce((SELECT clicks FROM prefix_ad_clicks
                                        WHERE prefix = p_prefix[i] AND ad_id = p_ad_id[i] AND day = p_day[i]), 0)
                              >= p_prefix_ad_limit[i] THEN
                        reason := 'prefix_ad_cap';
                    ELSIF p_prefix[i] <> '' AND p_prefix_limit[i] > 0
                          AND coalesce((SELECT clicks FROM prefix_clicks WHERE prefix = p_prefix[i] AND day = p_day[i]), 0)
                              >= p_prefix_limit[i] THEN
                        reason := 'prefix_cap';
                    ELSE
                        INSERT INTO window_claims (network, ad_id, at_ns, day)
                        VALUES (p_network[i], p_ad_id[i], p_at[i], p_day[i]);
                        IF p_prefix[i] <> '' AND p_prefix_limit[i] > 0 THEN
                            INSERT INTO prefix_clicks (prefix, day, clicks) VALUES (p_prefix[i], p_day[i], 1)
                            ON CONFLICT (prefix, day) DO UPDATE SET clicks = prefix_clicks.clicks + 1;
                        END IF;
                        IF p_prefix[i] <> '' AND p_prefix_ad_limit[i] > 0 THEN
                            INSERT INTO prefix_ad_clicks (prefix, ad_id, day, clicks)
                            VALUES (p_prefix[i], p_ad_id[i], p_day[i], 1)
                            ON CONFLICT (prefix, ad_id, day) DO UPDATE SET clicks = prefix_ad_clicks.clicks + 1;
                        END IF;
                        DELETE FROM window_claims WHERE network = p_network[i] AND at_ns < p_at[i] - 3 * 86400000000000;
                    END IF;
                END IF;
            END IF;
            reasons[i] := reason;
            IF reason = '' AND p_bid[i] <> 0 THEN
                j := array_position(spent_of, k);
                IF j IS NULL THEN
                    spent_of := spent_of || k;
                    spent_by := spent_by || p_bid[i];
                ELSE
                    spent_by[j] := spent_by[j] + p_bid[i];
                END IF;
            END IF;
        END LOOP;
    END IF;

    -- The days of the prefixes' counts no later click is judged by (two
    -- days before the batch's first), now and then.
    IF random() < 1.0 / 1024 THEN
        DELETE FROM prefix_clicks WHERE day < (SELECT min(x) FROM unnest(p_day) AS x) - 2;
        DELETE FROM prefix_ad_clicks WHERE day < (SELECT min(x) FROM unnest(p_day) AS x) - 2;
    END IF;

    -- A shard of the rollup and spend rows of this transaction's own: the
    -- connection's, unless another batch holds it.
    FOR t IN 0..15 LOOP
        IF pg_try_advisory_xact_lock(1633971315, (at_shard + t) % 16) THEN
            at_shard := (at_shard + t) % 16;
            EXIT;
        END IF;
    END LOOP;

    -- The click rows, the spend and the rollups, one statement. A
    -- concurrent transaction that recorded one of the ids first makes the
    -- clicks' insert fail on the unique index, and the transaction with
    -- it. Each click in every grain is summed by rollup row; rows are
    -- upserted in the order of their key, bytewise as the server orders
    -- the impressions'. A row all of whose clicks billed has no unbilled
    -- counts to add.
    WITH recorded AS (
        INSERT INTO clicks (at_ns, ad_id, ad_type, context, api_key, site_id, criterion, yk_tag, ip, user_agent, country,
                            advertiser, bid_micros, currency, billable, reason, click_id, budget_day)
        SELECT u.at, u.ad_id, u.ad_type, u.context, u.api_key, u.site_id, u.criterion, u.yk_tag, u.ip, u.user_agent,
               u.country, u.advertiser, u.bid, u.currency, u.reason = '', u.reason, NULLIF(u.id, ''),
               CASE WHEN u.reason = '' THEN u.day END
        FROM unnest(p_at, p_ad_id, p_ad_type, p_context, p_api_key, p_site_id, p_criterion, p_yk_tag, p_ip, p_user_agent,
                    p_country, p_advertiser, p_bid, p_currency, reasons, p_click_id, fresh, p_budget_day)
             WITH ORDINALITY AS u(at, ad_id, ad_type, context, api_key, site_id, criterion, yk_tag, ip, user_agent, country,
                                  advertiser, bid, currency, reason, id, fresh, day, o)
        WHERE u.fresh
        ORDER BY u.o),
    spending AS (
        INSERT INTO spend (advertiser, day, shard, micros)
        SELECT u.advertiser, u.day, at_shard, sum(u.bid)::bigint
        FROM unnest(p_advertiser, p_budget_day, p_bid, reasons, fresh) AS u(advertiser, day, bid, reason, fresh)
        WHERE u.fresh AND u.reason = '' AND u.bid <> 0
        GROUP BY u.advertiser, u.day
        ORDER BY u.advertiser COLLATE "C", u.day
        ON CONFLICT (advertiser, day, shard) DO UPDATE SET micros = spend.micros + EXCLUDED.micros)
    INSERT INTO rollups (grain, shard, period, api_key, site_id, advertiser, ad_id, context, currency, criterion,
                         yk_tag, country, impressions, clicks, billable, spend_micros, unbilled)
    SELECT a.grain, at_shard, a.period, a.api_key, a.site_id, a.advertiser, a.ad_id, a.context, a.currency,
           a.criterion, a.yk_tag, a.country, 0, a.clicks, a.billable, a.spend,
           CASE WHEN a.slots IS NULL THEN array_fill(0::bigint, ARRAY[cardinality(p_reasons)])
           ELSE ARRAY(SELECT count(x.slot) FROM generate_series(1, cardinality(p_reasons)) AS s
                      LEFT JOIN unnest(a.slots) AS x(slot) ON x.slot = s GROUP BY s ORDER BY s) END
    FROM (
        SELECT r.grain, r.period, r.api_key, r.site_id, r.advertiser, r.ad_id, r.context, r.currency, r.criterion,
               r.yk_tag, r.country, count(*) AS clicks, count(*) FILTER (WHERE r.bill) AS billable,
               coalesce(sum(r.bid) FILTER (WHERE r.bill), 0)::bigint AS spend,
               array_agg(r.slot) FILTER (WHERE r.slot IS NOT NULL) AS slots
        FROM (
            SELECT g.grain, CASE WHEN g.hourly THEN u.hour ELSE u.day END AS period,
                   CASE WHEN p_keeps[g.o * 9 - 8] THEN u.api_key ELSE '' END AS api_key,
                   CASE WHEN p_keeps[g.o * 9 - 7] THEN u.site_id ELSE '' END AS site_id,
                   CASE WHEN p_keeps[g.o * 9 - 6] THEN u.advertiser ELSE '' END AS advertiser,
                   CASE WHEN p_keeps[g.o * 9 - 5] THEN u.ad_id ELSE '' END AS ad_id,
                   CASE WHEN p_keeps[g.o * 9 - 4] THEN u.context ELSE '' END AS context,
                   CASE WHEN p_keeps[g.o * 9 - 3] THEN u.currency ELSE '' END AS currency,
                   CASE WHEN p_keeps[g.o * 9 - 2] THEN u.criterion ELSE '' END AS criterion,
                   CASE WHEN p_keeps[g.o * 9 - 1] THEN u.yk_tag ELSE '' END AS yk_tag,
                   CASE WHEN p_keeps[g.o * 9] THEN u.country ELSE '' END AS country,
                   u.reason = '' AS bill, u.bid,
                   CASE WHEN u.reason <> '' THEN array_position(p_reasons, u.reason) END AS slot
            FROM unnest(p_hour, p_day, p_api_key, p_site_id, p_advertiser, p_ad_id, p_context, p_currency, p_criterion,
                        p_yk_tag, p_country, p_bid, reasons, fresh)
                 AS u(hour, day, api_key, site_id, advertiser, ad_id, context, currency, criterion, yk_tag, country,
                      bid, reason, fresh)
            CROSS JOIN unnest(p_grains, p_hourly) WITH ORDINALITY AS g(grain, hourly, o)
            WHERE u.fresh
        ) AS r
        GROUP BY r.grain, r.period, r.api_key, r.site_id, r.advertiser, r.ad_id, r.context, r.currency, r.criterion,
                 r.yk_tag, r.country
    ) AS a
    ORDER BY a.grain, a.period, a.api_key COLLATE "C", a.site_id COLLATE "C", a.advertiser COLLATE "C",
             a.ad_id COLLATE "C", a.context COLLATE "C", a.currency COLLATE "C", a.criterion COLLATE "C",
             a.yk_tag COLLATE "C", a.country COLLATE "C"
    ON CONFLICT (grain, period, api_key, site_id, advertiser, ad_id, context, currency, criterion, yk_tag, country, shard)
    DO UPDATE SET impressions = rollups.impressions + EXCLUDED.impressions, clicks = rollups.clicks + EXCLUDED.clicks,
        billable = rollups.billable + EXCLUDED.billable, spend_micros = rollups.spend_micros + EXCLUDED.spend_micros,
        unbilled = CASE WHEN EXCLUDED.billable = EXCLUDED.clicks THEN rollups.unbilled
            ELSE ARRAY(SELECT coalesce(a, 0) + coalesce(b, 0)
                       FROM unnest(rollups.unbilled, EXCLUDED.unbilled) WITH ORDINALITY AS v(a, b, o) ORDER BY o) END;
    RETURN reasons;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION adlink_record_clicks(
    p_at bigint[], p_ad_id text[], p_ad_type text[], p_context text[], p_api_key text[], p_site_id text[],
    p_criterion text[], p_yk_tag text[], p_ip text[], p_user_agent text[], p_country text[], p_advertiser text[],
    p_bid bigint[], p_currency text[], p_reason text[], p_network text[], p_decision text[], p_expires bigint[],
    p_limit integer[], p_budget bigint[], p_hour bigint[], p_day bigint[], p_forget bigint[], p_click_id text[],
    p_grains smallint[], p_hourly boolean[], p_keeps boolean[], p_reasons text[], p_window bigint,
    p_prefix text[], p_prefix_limit integer[], p_prefix_ad_limit integer[], p_budget_day bigint[])
RETURNS text[] LANGUAGE plpgsql
-- A plan made for one batch's arrays serves the next: planned again for
-- each call, the statements cost about twice as much.
SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    n        integer := coalesce(array_length(p_at, 1), 0);
    reasons  text[];
    prior    text[];
    fresh    boolean[];
    used     text[];
    spent_of text[] := '{}';
    spent_by bigint[] := '{}';
    reason   text;
    spent    bigint;
    claims   bigint;
    inserted integer;
    j        integer;
    k        text;
    at_shard integer := pg_backend_pid() % 16;
BEGIN
    IF n = 0 THEN
        RETURN '{}';
    END IF;
    -- Each id looked up by the index, whatever plan was cached for the
    -- table when it was small.
    SELECT array_agg(x.prior ORDER BY x.o), array_agg(x.prior IS NULL ORDER BY x.o),
           array_agg(coalesce(x.prior, x.r) ORDER BY x.o)
    INTO prior, fresh, reasons
    FROM (SELECT u.o, u.r, (SELECT c.reason FROM clicks c WHERE c.click_id = u.id) AS prior
          FROM unnest(p_click_id, p_reason) WITH ORDINALITY AS u(id, r, o)) AS x;
    -- The prefixes' claims take turns to the commit, locked first and in
    -- the order of their locks' keys (two names may share one), before
    -- any network's or advertiser's lock. One lock covers a prefix's
    -- counts on all ads and on each.
    PERFORM pg_advisory_xact_lock(1633971312, x.h)
    FROM (SELECT DISTINCT hashtext(u.pre) AS h
          FROM unnest(reasons, fresh, p_prefix, p_prefix_limit, p_prefix_ad_limit) AS u(r, f, pre, lim, alim)
          WHERE u.f AND u.r = '' AND u.pre <> '' AND (u.lim > 0 OR u.alim > 0) ORDER BY 1) AS x;
    IF NOT EXISTS (SELECT 1 FROM unnest(p_click_id) AS x(id) WHERE x.id <> '' GROUP BY x.id HAVING count(*) > 1)
       AND NOT EXISTS (SELECT 1 FROM unnest(reasons, fresh, p_decision) AS x(r, f, id)
                       WHERE x.f AND x.r = '' AND x.id <> '' GROUP BY x.id HAVING count(*) > 1)
       AND NOT EXISTS (SELECT 1 FROM unnest(reasons, fresh, p_network) AS x(r, f, net)
                       WHERE x.f AND x.r = '' GROUP BY x.net HAVING count(*) > 1)
       AND NOT EXISTS (SELECT 1 FROM unnest(reasons, fresh, p_advertiser, p_budget_day, p_budget, p_bid) AS x(r, f, adv, day, budget, bid)
                       WHERE x.f AND x.r = '' AND (x.budget > 0 OR x.bid <> 0)
                       GROUP BY x.adv, x.day HAVING count(*) > 1 AND max(x.budget) > 0) THEN
        IF 0 < ANY (p_budget) THEN
            -- The advertisers' clicks of the day take turns to the commit.
            PERFORM pg_advisory_xact_lock(1633971298, hashtext(x.k))
            FROM (SELECT u.adv || '/' || u.day::text AS k
                  FROM unnest(reasons, fresh, p_advertiser, p_budget_day, p_budget) AS u(r, f, adv, day, budget)
                  WHERE u.f AND u.r = '' AND u.budget > 0 ORDER BY (u.adv || '/' || u.day::text) COLLATE "C") AS x;
            reasons := ARRAY(SELECT CASE WHEN u.f AND u.r = '' AND u.budget > 0 AND (SELECT coalesce(sum(s.micros), 0)
                                             FROM spend s WHERE s.advertiser = u.adv AND s.day = u.day) >= u.budget
                                         THEN 'over_budget' ELSE u.r END
                             FROM unnest(reasons, fresh, p_advertiser, p_budget_day, p_budget)
                                  WITH ORDINALITY AS u(r, f, adv, day, budget, o)
                             ORDER BY u.o);
        END IF;
        WITH ins AS (
            INSERT INTO decisions (id, expires_ns)
            SELECT u.id, u.expires FROM unnest(reasons, fresh, p_decision, p_at, p_expires) AS u(r, f, id, at, expires)
            WHERE u.f AND u.r = '' AND u.id <> '' AND u.at < u.expires ORDER BY u.id COLLATE "C"
            ON CONFLICT (id) DO NOTHING RETURNING id)
        SELECT coalesce(array_agg(ins.id), '{}') INTO used FROM ins;
        IF random() < cardinality(used) / 1024.0 THEN
            DELETE FROM decisions WHERE expires_ns < (SELECT min(x) FROM unnest(p_forget) AS x);
        END IF;
        -- A click not refused yet is judged by its network's windows; the
        -- networks' claims take turns to the commit, locked in the order
        -- of their names, as the server orders a batch.
        PERFORM pg_advisory_xact_lock(1633971307, hashtext(x.net))
        FROM (SELECT u.net FROM unnest(reasons, fresh, p_network, p_decision, p_at, p_expires)
                                AS u(r, f, net, id, at, expires)
              WHERE u.f AND u.r = '' AND (u.id = '' OR (u.at < u.expires AND u.id = ANY (used)))
              ORDER BY u.net COLLATE "C") AS x;
        -- The verdicts, the claims of the clicks that bill, and the end of
        -- what no later claim can be judged by (claims older than three
        -- days before the batch's first click): one statement, which
        -- sees the claims as they were before it.
        WITH w AS (
            SELECT u.o, u.f, u.net, u.ad, u.at, u.day, u.pre, u.plim, u.alim, CASE
                WHEN NOT (u.f AND u.r = '') THEN u.r
                WHEN u.id <> '' AND (u.at >= u.expires OR NOT u.id = ANY (used)) THEN 'repeat'
                WHEN EXISTS (SELECT 1 FROM window_claims w WHERE w.network = u.net AND w.ad_id = u.ad
                             AND w.at_ns > u.at - p_window AND w.at_ns < u.at + p_window) THEN 'repeat'
                WHEN u.lim > 0 AND (SELECT count(*) FROM window_claims w WHERE w.network = u.net AND w.day = u.day) >= u.lim
                    THEN 'network_cap'
                ELSE '' END AS r
            FROM unnest(reasons, fresh, p_decision, p_expires, p_network, p_ad_id, p_at, p_limit, p_day, p_prefix,
                        p_prefix_limit, p_prefix_ad_limit)
                 WITH ORDINALITY AS u(r, f, id, expires, net, ad, at, lim, day, pre, plim, alim, o)),
        -- A click its network lets bill is prefix_ad_cap when its prefix's
        -- count on its ad of the day, with the batch's clicks of the
        -- prefix on the ad before it and itself, passes the cap per ad;
        -- then, of the clicks left, prefix_cap when the prefix's count of
        -- the day so passes the cap on all ads: the clicks of one prefix
        -- are counted in the batch's order. The clicks that bill are those
        -- the loop below would bill; once the prefix had its cap, a later
        -- click of an ad whose clicks it refused may be given either reason.
        a AS (
            SELECT w.o, w.f, w.net, w.ad, w.at, w.day, w.pre, w.plim, w.alim, CASE
                WHEN w.f AND w.r = '' AND w.alim > 0 AND w.pre <> ''
                     AND coalesce((SELECT p.clicks FROM prefix_ad_clicks p
                                    WHERE p.prefix = w.pre AND p.ad_id = w.ad AND p.day = w.day), 0)
                         + count(*) FILTER (WHERE w.f AND w.r = '' AND w.alim > 0)
                               OVER (PARTITION BY w.pre, w.ad, w.day ORDER BY w.o) > w.alim
                    THEN 'prefix_ad_cap'
                ELSE w.r END AS r
            FROM w),
        v AS (
            SELECT a.o, a.f, a.net, a.ad, a.at, a.day, a.pre, a.plim, a.alim, CASE
                WHEN a.f AND a.r = '' AND a.plim > 0 AND a.pre <> ''
                     AND coalesce((SELECT p.clicks FROM prefix_clicks p WHERE p.prefix = a.pre AND p.day = a.day), 0)
                         + count(*) FILTER (WHERE a.f AND a.r = '' AND a.plim > 0)
                               OVER (PARTITION BY a.pre, a.day ORDER BY a.o) > a.plim
                    THEN 'prefix_cap'
                ELSE a.r END AS r
            FROM a),
        claimed AS (
            INSERT INTO window_claims (network, ad_id, at_ns, day)
            SELECT v.net, v.ad, v.at, v.day FROM v WHERE v.f AND v.r = ''),
        counted AS (
            INSERT INTO prefix_clicks (prefix, day, clicks)
            SELECT v.pre, v.day, count(*) FROM v WHERE v.f AND v.r = '' AND v.pre <> '' AND v.plim > 0
            GROUP BY v.pre, v.day ORDER BY v.pre COLLATE "C", v.day
            ON CONFLICT (prefix, day) DO UPDATE SET clicks = prefix_clicks.clicks + EXCLUDED.clicks),
        counted_ads AS (
            INSERT INTO prefix_ad_clicks (prefix, ad_id, day, clicks)
            SELECT v.pre, v.ad, v.day, count(*) FROM v WHERE v.f AND v.r = '' AND v.pre <> '' AND v.alim > 0
            GROUP BY v.pre, v.ad, v.day ORDER BY v.pre COLLATE "C", v.ad COLLATE "C", v.day
            ON CONFLICT (prefix, ad_id, day) DO UPDATE SET clicks = prefix_ad_clicks.clicks + EXCLUDED.clicks),
        forgotten AS (
            DELETE FROM window_claims w
            WHERE w.network = ANY (ARRAY(SELECT v.net FROM v WHERE v.f AND v.r = ''))
              AND w.at_ns < (SELECT min(x) FROM unnest(p_at) AS x) - 3 * 86400000000000)
        SELECT array_agg(v.r ORDER BY v.o) INTO reasons FROM v;
    ELSE
        FOR i IN 1..n LOOP
            IF prior[i] IS NOT NULL THEN
                reasons[i] := prior[i];
                fresh[i] := false;
                CONTINUE;
            END IF;
            IF p_click_id[i] <> '' THEN
                j := array_position(p_click_id, p_click_id[i]);
                IF j < i THEN
                    reasons[i] := reasons[j];
                    fresh[i] := false;
                    CONTINUE;
                END IF;
            END IF;
            reason := p_reason[i];
            k := p_advertiser[i] || '/' || p_budget_day[i]::text;
            IF reason = '' AND p_budget[i] > 0 THEN
                -- The advertiser's clicks of the day take turns to the commit.
                PERFORM pg_advisory_xact_lock(1633971298, hashtext(k));
                SELECT coalesce(sum(micros), 0) INTO spent FROM spend WHERE advertiser = p_advertiser[i] AND day = p_budget_day[i];
                j := array_position(spent_of, k);
                IF j IS NOT NULL THEN
                    spent := spent + spent_by[j];
                END IF;
                IF spent >= p_budget[i] THEN
                    reason := 'over_budget';
                END IF;
            END IF;
            IF reason = '' AND p_decision[i] <> '' THEN
                IF p_at[i] >= p_expires[i] THEN
                    reason := 'repeat';
                ELSE
                    INSERT INTO decisions (id, expires_ns) VALUES (p_decision[i], p_expires[i]) ON CONFLICT (id) DO NOTHING;
                    GET DIAGNOSTICS inserted = ROW_COUNT;
                    IF inserted = 0 THEN
                        reason := 'repeat';
                    ELSIF random() < 1.0 / 1024 THEN
                        DELETE FROM decisions WHERE expires_ns < p_forget[i];
                    END IF;
                END IF;
            END IF;
            IF reason = '' THEN
                -- The network's claims take turns to the commit.
                PERFORM pg_advisory_xact_lock(1633971307, hashtext(p_network[i]));
                IF EXISTS (SELECT 1 FROM window_claims WHERE network = p_network[i] AND ad_id = p_ad_id[i]
                           AND at_ns > p_at[i] - p_window AND at_ns < p_at[i] + p_window) THEN
                    reason := 'repeat';
                ELSE
                    claims := 0;
                    IF p_limit[i] > 0 THEN
                        SELECT count(*) INTO claims FROM window_claims WHERE network = p_network[i] AND day = p_day[i];
                    END IF;
                    IF p_limit[i] > 0 AND claims >= p_limit[i] THEN
                        reason := 'network_cap';
                    ELSIF p_prefix[i] <> '' AND p_prefix_ad_limit[i] > 0
                          AND coalesce((SELECT clicks FROM prefix_ad_clicks
                                        WHERE prefix = p_prefix[i] AND ad_id = p_ad_id[i] AND day = p_day[i]), 0)
                              >= p_prefix_ad_limit[i] THEN
                        reason := 'prefix_ad_cap';
                    ELSIF p_prefix[i] <> '' AND p_prefix_limit[i] > 0
                          AND coalesce((SELECT clicks FROM prefix_clicks WHERE prefix = p_prefix[i] AND day = p_day[i]), 0)
                              >= p_prefix_limit[i] THEN
                        reason := 'prefix_cap';
                    ELSE
                        INSERT INTO window_claims (network, ad_id, at_ns, day)
                        VALUES (p_network[i], p_ad_id[i], p_at[i], p_day[i]);
                        IF p_prefix[i] <> '' AND p_prefix_limit[i] > 0 THEN
                            INSERT INTO prefix_clicks (prefix, day, clicks) VALUES (p_prefix[i], p_day[i], 1)
                            ON CONFLICT (prefix, day) DO UPDATE SET clicks = prefix_clicks.clicks + 1;
                        END IF;
                        IF p_prefix[i] <> '' AND p_prefix_ad_limit[i] > 0 THEN
                            INSERT INTO prefix_ad_clicks (prefix, ad_id, day, clicks)
                            VALUES (p_prefix[i], p_ad_id[i], p_day[i], 1)
                            ON CONFLICT (prefix, ad_id, day) DO UPDATE SET clicks = prefix_ad_clicks.clicks + 1;
                        END IF;
                        DELETE FROM window_claims WHERE network = p_network[i] AND at_ns < p_at[i] - 3 * 86400000000000;
                    END IF;
                END IF;
            END IF;
            reasons[i] := reason;
            IF reason = '' AND p_bid[i] <> 0 THEN
                j := array_position(spent_of, k);
                IF j IS NULL THEN
                    spent_of := spent_of || k;
                    spent_by := spent_by || p_bid[i];
                ELSE
                    spent_by[j] := spent_by[j] + p_bid[i];
                END IF;
            END IF;
        END LOOP;
    END IF;

    -- The days of the prefixes' counts no later click is judged by (two
    -- days before the batch's first), now and then.
    IF random() < 1.0 / 1024 THEN
        DELETE FROM prefix_clicks WHERE day < (SELECT min(x) FROM unnest(p_day) AS x) - 2;
        DELETE FROM prefix_ad_clicks WHERE day < (SELECT min(x) FROM unnest(p_day) AS x) - 2;
    END IF;

    -- A shard of the rollup and spend rows of this transaction's own: the
    -- connection's, unless another batch holds it.
    FOR t IN 0..15 LOOP
        IF pg_try_advisory_xact_lock(1633971315, (at_shard + t) % 16) THEN
            at_shard := (at_shard + t) % 16;
            EXIT;
        END IF;
    END LOOP;

    -- The click rows, the spend and the rollups, one statement. A
    -- concurrent transaction that recorded one of the ids first makes the
    -- clicks' insert fail on the unique index, and the transaction with
    -- it. Each click in every grain is summed by rollup row; rows are
    -- upserted in the order of their key, bytewise as the server orders
    -- the impressions'. A row all of whose clicks billed has no unbilled
    -- counts to add.
    WITH recorded AS (
        INSERT INTO clicks (at_ns, ad_id, ad_type, context, api_key, site_id, criterion, yk_tag, ip, user_agent, country,
                            advertiser, bid_micros, currency, billable, reason, click_id)
        SELECT u.at, u.ad_id, u.ad_type, u.context, u.api_key, u.site_id, u.criterion, u.yk_tag, u.ip, u.user_agent,
               u.country, u.advertiser, u.bid, u.currency, u.reason = '', u.reason, NULLIF(u.id, '')
        FROM unnest(p_at, p_ad_id, p_ad_type, p_context, p_api_key, p_site_id, p_criterion, p_yk_tag, p_ip, p_user_agent,
                    p_country, p_advertiser, p_bid, p_currency, reasons, p_click_id, fresh)
             WITH ORDINALITY AS u(at, ad_id, ad_type, context, api_key, site_id, criterion, yk_tag, ip, user_agent, country,
                                  advertiser, bid, currency, reason, id, fresh, o)
        WHERE u.fresh
        ORDER BY u.o),
    spending AS (
        INSERT INTO spend (advertiser, day, shard, micros)
        SELECT u.advertiser, u.day, at_shard, sum(u.bid)::bigint
        FROM unnest(p_advertiser, p_budget_day, p_bid, reasons, fresh) AS u(advertiser, day, bid, reason, fresh)
        WHERE u.fresh AND u.reason = '' AND u.bid <> 0
        GROUP BY u.advertiser, u.day
        ORDER BY u.advertiser COLLATE "C", u.day
        ON CONFLICT (advertiser, day, shard) DO UPDATE SET micros = spend.micros + EXCLUDED.micros)
    INSERT INTO rollups (grain, shard, period, api_key, site_id, advertiser, ad_id, context, currency, criterion,
                         yk_tag, country, impressions, clicks, billable, spend_micros, unbilled)
    SELECT a.grain, at_shard, a.period, a.api_key, a.site_id, a.advertiser, a.ad_id, a.context, a.currency,
           a.criterion, a.yk_tag, a.country, 0, a.clicks, a.billable, a.spend,
           CASE WHEN a.slots IS NULL THEN array_fill(0::bigint, ARRAY[cardinality(p_reasons)])
           ELSE ARRAY(SELECT count(x.slot) FROM generate_series(1, cardinality(p_reasons)) AS s
                      LEFT JOIN unnest(a.slots) AS x(slot) ON x.slot = s GROUP BY s ORDER BY s) END
    FROM (
        SELECT r.grain, r.period, r.api_key, r.site_id, r.advertiser, r.ad_id, r.context, r.currency, r.criterion,
               r.yk_tag, r.country, count(*) AS clicks, count(*) FILTER (WHERE r.bill) AS billable,
               coalesce(sum(r.bid) FILTER (WHERE r.bill), 0)::bigint AS spend,
               array_agg(r.slot) FILTER (WHERE r.slot IS NOT NULL) AS slots
        FROM (
            SELECT g.grain, CASE WHEN g.hourly THEN u.hour ELSE u.day END AS period,
                   CASE WHEN p_keeps[g.o * 9 - 8] THEN u.api_key ELSE '' END AS api_key,
                   CASE WHEN p_keeps[g.o * 9 - 7] THEN u.site_id ELSE '' END AS site_id,
                   CASE WHEN p_keeps[g.o * 9 - 6] THEN u.advertiser ELSE '' END AS advertiser,
                   CASE WHEN p_keeps[g.o * 9 - 5] THEN u.ad_id ELSE '' END AS ad_id,
                   CASE WHEN p_keeps[g.o * 9 - 4] THEN u.context ELSE '' END AS context,
                   CASE WHEN p_keeps[g.o * 9 - 3] THEN u.currency ELSE '' END AS currency,
                   CASE WHEN p_keeps[g.o * 9 - 2] THEN u.criterion ELSE '' END AS criterion,
                   CASE WHEN p_keeps[g.o * 9 - 1] THEN u.yk_tag ELSE '' END AS yk_tag,
                   CASE WHEN p_keeps[g.o * 9] THEN u.country ELSE '' END AS country,
                   u.reason = '' AS bill, u.bid,
                   CASE WHEN u.reason <> '' THEN array_position(p_reasons, u.reason) END AS slot
            FROM unnest(p_hour, p_day, p_api_key, p_site_id, p_advertiser, p_ad_id, p_context, p_currency, p_criterion,
                        p_yk_tag, p_country, p_bid, reasons, fresh)
                 AS u(hour, day, api_key, site_id, advertiser, ad_id, context, currency, criterion, yk_tag, country,
                      bid, reason, fresh)
            CROSS JOIN unnest(p_grains, p_hourly) WITH ORDINALITY AS g(grain, hourly, o)
            WHERE u.fresh
        ) AS r
        GROUP BY r.grain, r.period, r.api_key, r.site_id, r.advertiser, r.ad_id, r.context, r.currency, r.criterion,
                 r.yk_tag, r.country
    ) AS a
    ORDER BY a.grain, a.period, a.api_key COLLATE "C", a.site_id COLLATE "C", a.advertiser COLLATE "C",
             a.ad_id COLLATE "C", a.context COLLATE "C", a.currency COLLATE "C", a.criterion COLLATE "C",
             a.yk_tag COLLATE "C", a.country COLLATE "C"
    ON CONFLICT (grain, period, api_key, site_id, advertiser, ad_id, context, currency, criterion, yk_tag, country, shard)
    DO UPDATE SET impressions = rollups.impressions + EXCLUDED.impressions, clicks = rollups.clicks + EXCLUDED.clicks,
        billable = rollups.billable + EXCLUDED.billable, spend_micros = rollups.spend_micros + EXCLUDED.spend_micros,
        unbilled = CASE WHEN EXCLUDED.billable = EXCLUDED.clicks THEN rollups.unbilled
            ELSE ARRAY(SELECT coalesce(a, 0) + coalesce(b, 0)
                       FROM unnest(rollups.unbilled, EXCLUDED.unbilled) WITH ORDINALITY AS v(a, b, o) ORDER BY o) END;
    RETURN reasons;
END
$$;
-- +goose StatementEnd

ALTER TABLE clicks DROP COLUMN budget_day;
