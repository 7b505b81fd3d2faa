-- The credits' epoch: one row whose n each batch of a credit of invalid
-- clicks (adlink invalidate, POST /admin/invalidate) adds one to, in the
-- batch's transaction. Each server reads it every second and, when it
-- changed, reads its budgeted advertisers' spend of the day again, so
-- that an advertiser a credit gave room is shown again on every replica.
-- The row's lock orders the batches: n grows in the order they commit.

-- +goose Up
CREATE TABLE credit_epoch (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    n bigint NOT NULL
);
INSERT INTO credit_epoch (id, n) VALUES (true, 0);

-- +goose Down
DROP TABLE credit_epoch;
