-- Each distinct profile of the bill's cost lines: the text columns with few values, stored once per combination.
-- grain: one row per profile_key, every provider
-- periods: keyed by profile_key of normalized.cost_line_facts (a night that carries some billing periods carries
-- the profiles their lines use)
-- A line's profile is its category, service, SKU, usage type, operation, place, account names, delivery, invoice and
-- FOCUS names (line_profile_columns). Each source computes them once per distinct combination of the source columns
-- they are read from (staging.<provider>_line_profiles) and names them by profile_key, a 64-bit hash of those source
-- columns that normalized.cost_line_facts carries on every line. checks.line_profile_keys_unique fails the run if
-- two different profiles ever share a key. A bill has a few thousand profiles for millions of lines.
with provider_profiles as (
    select * from staging.provider_line_profiles
),

final as (
    -- two source combinations that give the same profile under one key are one row
    select distinct
        provider_profiles.profile_key,
        -- a macro (pipeline/dag/profile_macros.py): the profile columns, each under its own name
        line_profile_columns(provider_profiles)  -- noqa: AL03
    from provider_profiles
)

select * from final
