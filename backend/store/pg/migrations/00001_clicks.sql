-- The durable record of clicks and impressions, the rollups reports read,
-- the daily spend budgets read, and the single-use state that judges a
-- click: decisions and the networks' windows. Times are Unix nanoseconds,
-- exactly as the server stamped them; periods are Unix hours or UTC days.

-- +goose Up
CREATE TABLE clicks (
    seq        bigserial PRIMARY KEY,
    at_ns      bigint  NOT NULL,
    ad_id      text    NOT NULL,
    ad_type    text    NOT NULL,
    context    text    NOT NULL,
    api_key    text    NOT NULL,
    site_id    text    NOT NULL,
    criterion  text    NOT NULL,
    yk_tag     text    NOT NULL,
    ip         text    NOT NULL,
    user_agent text    NOT NULL,
    country    text    NOT NULL,
    advertiser text    NOT NULL,
    bid_micros bigint  NOT NULL,
    currency   text    NOT NULL,
    billable   boolean NOT NULL,
    reason     text    NOT NULL
);
CREATE INDEX clicks_at ON clicks (at_ns, seq);

CREATE TABLE impressions (
    seq        bigserial PRIMARY KEY,
    at_ns      bigint NOT NULL,
    ad_id      text   NOT NULL,
    ad_type    text   NOT NULL,
    context    text   NOT NULL,
    api_key    text   NOT NULL,
    site_id    text   NOT NULL,
    criterion  text   NOT NULL,
    yk_tag     text   NOT NULL,
    page       text   NOT NULL,
    ip         text   NOT NULL,
    user_agent text   NOT NULL,
    country    text   NOT NULL,
    advertiser text   NOT NULL,
    currency   text   NOT NULL
);
CREATE INDEX impressions_at ON impressions (at_ns, seq);

-- One row per grain (clicks.Grain), period, the dimensions the grain
-- keeps ('' for those it does not) and shard. unbilled counts the clicks
-- that did not bill by reason, in the order of clicks.Reasons. A row's
-- measures are the sum over its shards: each connection adds to its own
-- shard, so that concurrent clicks of one ad do not wait for each other's
-- commit to add to the same row.
CREATE TABLE rollups (
    grain        smallint NOT NULL,
    shard        smallint NOT NULL,
    period       bigint   NOT NULL,
    api_key      text     NOT NULL,
    site_id      text     NOT NULL,
    advertiser   text     NOT NULL,
    ad_id        text     NOT NULL,
    context      text     NOT NULL,
    currency     text     NOT NULL,
    criterion    text     NOT NULL,
    yk_tag       text     NOT NULL,
    country      text     NOT NULL,
    impressions  bigint   NOT NULL,
    clicks       bigint   NOT NULL,
    billable     bigint   NOT NULL,
    spend_micros bigint   NOT NULL,
    unbilled     bigint[] NOT NULL,
    PRIMARY KEY (grain, period, api_key, site_id, advertiser, ad_id, context, currency, criterion, yk_tag, country, shard)
);

-- An advertiser's spend of a UTC day: the sum over its shards, as the
-- rollups'.
CREATE TABLE spend (
    advertiser text     NOT NULL,
    day        bigint   NOT NULL,
    shard      smallint NOT NULL,
    micros     bigint   NOT NULL,
    PRIMARY KEY (advertiser, day, shard)
);

CREATE TABLE decisions (
    id         text   PRIMARY KEY,
    expires_ns bigint NOT NULL
);
CREATE INDEX decisions_expires ON decisions (expires_ns);

-- Each billable click's claim on its network's windows.
CREATE TABLE window_claims (
    network text   NOT NULL,
    ad_id   text   NOT NULL,
    at_ns   bigint NOT NULL,
    day     bigint NOT NULL
);
CREATE INDEX window_claims_ad ON window_claims (network, ad_id, at_ns);
CREATE INDEX window_claims_day ON window_claims (network, day);

-- +goose Down
DROP TABLE window_claims;
DROP TABLE decisions;
DROP TABLE spend;
DROP TABLE rollups;
DROP TABLE impressions;
DROP TABLE clicks;
