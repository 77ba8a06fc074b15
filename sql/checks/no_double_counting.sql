-- No cost line counts twice: line ids are unique, each source file is read once, no split-cost pod row is in the bill.
-- grain: one row per source file whose line ids collide or repeat, or per split-cost row in the bill
-- A line id is line_id_of(source range, file index, row in the file), so ids repeat only when a file is read
-- twice or two files share an index; both show per file, without a group-by on line_id: a file whose ids span two file
-- indexes, more lines than ids in its range, or an id range overlapping another file's. (A row repeated inside
-- a file while other rows of it are missing, keeping the count within the range, is not seen here: ingest
-- refuses repeated rows and files, and the exact per-line check runs in the test suite, tests/exact_checks.py.)
with cost_lines as (
    select
        cost_lines.line_id,
        cost_lines.source_delivery,
        cost_lines.source_file,
        cost_lines.operation
    from normalized.cost_lines as cost_lines
),

files as (
    -- a file, not a provider: one FOCUS file holds the lines of several providers
    select
        cost_lines.source_delivery,
        cost_lines.source_file,
        count(*) as line_count,
        min(cost_lines.line_id) as first_line_id,
        max(cost_lines.line_id) as last_line_id
    from cost_lines
    group by cost_lines.source_delivery, cost_lines.source_file
),

ordered_files as (
    select
        files.*,
        max(files.last_line_id) over (
            order by files.first_line_id, files.last_line_id
            rows between unbounded preceding and 1 preceding
        ) as earlier_last_line_id
    from files
),

file_problems as (
    select
        case
            when
                file_of_line_id(ordered_files.first_line_id)
                <> file_of_line_id(ordered_files.last_line_id)
                then 'file read twice'
            when
                ordered_files.line_count
                > ordered_files.last_line_id - ordered_files.first_line_id + 1
                then 'duplicate line_id'
            else 'line ids shared with another file'
        end as problem,
        concat_ws(':', ordered_files.source_delivery, ordered_files.source_file) as line_key,
        ordered_files.line_count as occurrences
    from ordered_files
    where
        file_of_line_id(ordered_files.first_line_id) <> file_of_line_id(ordered_files.last_line_id)
        or ordered_files.line_count > ordered_files.last_line_id - ordered_files.first_line_id + 1
        or ordered_files.first_line_id <= ordered_files.earlier_last_line_id
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
    select * from file_problems
    union all
    select * from split_rows
)

select * from final
