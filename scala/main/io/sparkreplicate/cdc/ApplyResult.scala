package io.sparkreplicate.cdc

/**
 * What one batch of [[Changes.applyChanges]] did. Type 1: `inserted`, `updated` and `deleted`
 * count the target's rows (keys); type 2: versions opened, versions closed, and keys deleted.
 * `ignored` counts the input's change rows that were stale (not newer than their key's last
 * applied change) or duplicates. `batch` is the batch's number in the target's log. `held` counts
 * the change rows held for a later run, their transaction not complete (`applyTopic` with
 * `transactional`).
 */
case class ApplyResult(batch: Long, inserted: Long, updated: Long, deleted: Long, ignored: Long, held: Long = 0)
