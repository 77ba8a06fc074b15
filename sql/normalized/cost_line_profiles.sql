-- Each distinct profile of the bill's cost lines: the text columns with few values, stored once per combination.
-- grain: one row per distinct combination of line_profile_columns (profile_key), every provider
-- A line's profile is its category, service, SKU, usage type, operation, place, account names, delivery, invoice and
-- FOCUS names (line_profile_columns); normalized.cost_line_facts names it by profile_key, a 64-bit hash of them,
-- and checks.line_profile_keys_unique fails the run if two profiles ever share a key. A bill has a few thousand
-- profiles for millions of lines.
with provider_lines as (
    select * from staging.provider_cost_lines
),

profiles as (
    select distinct line_profile_columns(provider_lines)
    from provider_lines
),

final as (
    select
        line_profile_key(profiles) as profile_key,
        -- a macro (pipeline/dag/macros.py): the profile columns, each under its own name
        line_profile_columns(profiles)  -- noqa: AL03
    from profiles
)

select * from final
