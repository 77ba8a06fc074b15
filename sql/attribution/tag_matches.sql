-- Cost lines placed by tag: on the attempt an attempt tag names, else on the experiment an experiment tag names.
-- grain: one row per line_id that a known attempt or experiment tag places
-- materialized: intermediate (a step of the build, never published: allocation.cost_slices carries its result)
with tagged_lines as (
    select
        cost_lines.line_id,
        cost_lines.attempt_tag,
        cost_lines.experiment_tag
    from normalized.cost_line_facts as cost_lines
    where cost_lines.attempt_tag is not null or cost_lines.experiment_tag is not null
),

attempts as (
    select
        attempts.attempt_id,
        attempts.experiment_id
    from staging.attempts as attempts
),

known_experiments as (
    select * from known_experiments()
),

attempt_matches as (
    select
        tagged_lines.line_id,
        attempts.attempt_id,
        attempts.experiment_id,
        'tag' as attribution_method
    from tagged_lines
    inner join attempts on tagged_lines.attempt_tag = attempts.attempt_id
),

experiment_matches as (
    select
        tagged_lines.line_id,
        cast(null as varchar) as attempt_id,
        known_experiments.experiment_id,
        'experiment_tag' as attribution_method
    from tagged_lines
    inner join known_experiments on tagged_lines.experiment_tag = known_experiments.experiment_id
    anti join attempt_matches on tagged_lines.line_id = attempt_matches.line_id
),

final as (
    select * from attempt_matches
    union all
    select * from experiment_matches
)

select * from final
