-- No cost line counts twice: unique ids and source rows, no split-cost pod row beside the rows it splits.
-- grain: one row per duplicated line_id or source row, or split-cost row in the bill
with cost_lines as (
    select * from normalized.cost_lines
),

duplicate_ids as (
    select
        'duplicate line_id' as problem,
        cast(cost_lines.line_id as varchar) as line_key,
        count(*) as occurrences
    from cost_lines
    group by cost_lines.line_id
    having count(*) > 1
),

duplicate_sources as (
    select
        'duplicate source row' as problem,
        concat_ws(
            ':', cost_lines.source_delivery, cost_lines.source_file, cost_lines.source_line
        ) as line_key,
        count(*) as occurrences
    from cost_lines
    group by cost_lines.source_delivery, cost_lines.source_file, cost_lines.source_line
    having count(*) > 1
),

split_rows as (
    select
        'split-cost row counted in the bill' as problem,
        cast(cost_lines.line_id as varchar) as line_key,
        1 as occurrences
    from cost_lines
    where cost_lines.operation in ('EKSPod-EC2', 'ECSTask-EC2')
),

final as (
    select * from duplicate_ids
    union all
    select * from duplicate_sources
    union all
    select * from split_rows
)

select * from final
