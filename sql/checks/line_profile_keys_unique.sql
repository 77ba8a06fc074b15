-- No two profiles of the bill share a profile key: each cost line joins back to exactly its own profile.
-- grain: one row per profile_key that names more than one profile (none when the check passes)
-- profile_key is a 64-bit hash of the source columns a profile is computed from (<provider>_profile_key); two
-- profiles sharing one would give normalized.cost_lines a line twice. A bill of a million profiles meets such a pair
-- about once in 10^7 runs.
with profiles as (
    select * from normalized.cost_line_profiles
),

final as (
    select
        profiles.profile_key,
        count(*) as profiles
    from profiles
    group by profiles.profile_key
    having count(*) > 1
)

select * from final
