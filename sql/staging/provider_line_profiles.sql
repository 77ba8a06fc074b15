-- Every provider's line profiles in one relation: the columns of each staging.<provider>_line_profiles view.
-- grain: one row per (profile_key), every provider
-- Each source's key hashes its name first (<source>_profile_key, pipeline/dag/profile_macros.py), so the sources' keys
-- do not meet; normalized.cost_line_profiles reads it.
with aws_line_profiles as (
    select * from staging.aws_line_profiles
),

gcp_line_profiles as (
    select * from staging.gcp_line_profiles
),

focus_line_profiles as (
    select * from staging.focus_line_profiles
),

final as (
    select * from aws_line_profiles
    union all
    select * from gcp_line_profiles
    union all
    select * from focus_line_profiles
)

select * from final
