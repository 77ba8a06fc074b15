-- Every slice's share lies in [0, 1].
-- grain: one row per (allocation_model, line_id, allocation_kind, attempt_id) slice whose share is out of range
-- A filter over the slices, with no group-by on line_id. That a line's attributed shares sum to at most 1, and
-- to 1 where nothing is left over, is a per-line sum: its exact form (tests/exact_checks.py) runs in the test
-- suite on every scenario world, and slices_sum_to_line's checksum sees the money such shares would move.
with model_slices as (
    select * from allocation.model_slices
),

final as (
    select
        slice_key(model_slices),  -- noqa: AL03
        model_slices.share
    from model_slices
    where model_slices.share < 0 or model_slices.share > 1 + 1e-9
)

select * from final
