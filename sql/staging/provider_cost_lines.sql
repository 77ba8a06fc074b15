-- Every provider's cost lines in one relation: the columns of each staging.<provider>_cost_lines view.
-- grain: one row per billed line item (line_id), every provider
-- Line ids are disjoint by construction (each source owns a range: AWS CUR 2.0 ids are below 2^56, the
-- Google Cloud billing export's start at 2^56, FOCUS files' at 2 * 2^56). normalized.cost_line_facts and
-- normalized.cost_line_profiles read it, each for its own columns.
with aws_cost_lines as (
    select * from staging.aws_cost_lines
),

gcp_cost_lines as (
    select * from staging.gcp_cost_lines
),

focus_cost_lines as (
    select * from staging.focus_cost_lines
),

final as (
    select * from aws_cost_lines
    union all
    select * from gcp_cost_lines
    union all
    select * from focus_cost_lines
)

select * from final
