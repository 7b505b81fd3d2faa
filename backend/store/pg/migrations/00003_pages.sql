-- The page analyses and the queue of pages waiting for analysis
-- (pages.Store), shared by every server so that each page is fetched by
-- one of them. URLs and sites are kept as the bytes the server gave, as
-- the bbolt store keeps them; a record is its JSON (pages.Record).

-- +goose Up
-- own says the record is the page's own (no Source): an alias's analysis
-- never replaces it. at_ns is the record's At, which Sweep reads.
CREATE TABLE page_records (
    url   bytea   PRIMARY KEY,
    at_ns bigint  NOT NULL,
    own   boolean NOT NULL,
    data  bytea   NOT NULL
);
CREATE INDEX page_records_at ON page_records (at_ns);

-- One row per queued page, in arrival order (seq). held_until, by the
-- database's clock, is when the hold of the worker that claimed the job
-- ends unless it renews it; holder tells that worker's claims apart from
-- a later one's.
CREATE TABLE page_jobs (
    seq        bigserial   PRIMARY KEY,
    url        bytea       NOT NULL UNIQUE,
    site       bytea       NOT NULL,
    queued_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    held_until timestamptz,
    holder     bigint
);
CREATE INDEX page_jobs_site ON page_jobs (site);

-- +goose Down
DROP TABLE page_jobs;
DROP TABLE page_records;
