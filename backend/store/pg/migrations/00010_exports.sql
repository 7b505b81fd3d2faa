-- Retention exports each UTC day of the raw clicks and impressions to a
-- file on the disk of whichever server runs the pass, and records it here
-- before it deletes the day's rows: a day with a record is only deleted,
-- never exported again, whichever server runs the next pass. The record
-- names the server (host) and the file's path there, so an operator finds
-- each day's export, and the file's rows and SHA-256 to check it by.

-- +goose Up
CREATE TABLE exports (
    log         text        NOT NULL,
    day         date        NOT NULL,
    exported_at timestamptz NOT NULL,
    host        text        NOT NULL,
    path        text        NOT NULL,
    rows        bigint      NOT NULL,
    sha256      bytea       NOT NULL,
    PRIMARY KEY (log, day)
);

-- +goose Down
DROP TABLE exports;
