//! The sums of shared budgets: a run counted again replaces what it counted, a card's and a
//! project's day add up their runs, a grant is given once however many runs' approvals are
//! allowed, and a cap reached names its scope in words.

use bosun_shared::agents::CliKind;
use bosun_shared::usage::{Budget, BudgetScope, Reached, Spent, Tokens};
use bosun_shared::{CardId, ProjectId, RunId, Timestamp};

use super::{CardBudgets, ProjectBudget, Spend, UsageRow};

const DAY: u64 = 86_400_000;
/// 2027-01-15, midday UTC.
const NOON: u64 = 1_800_000_000_000 - 1_800_000_000_000 % DAY + DAY / 2;

fn row(
    id: RunId,
    card: CardId,
    project: Option<ProjectId>,
    at: u64,
    usd: u64,
    tokens: u64,
) -> UsageRow {
    UsageRow {
        id,
        created_at: Timestamp::from_millis(at),
        agent_name: "coder".into(),
        cli: CliKind::Codex,
        card: Some(card),
        project,
        tokens: Tokens {
            input: tokens,
            ..Tokens::default()
        },
        micro_usd: Some(usd),
        tool_calls: 0,
        allowed_calls: 0,
        models: Vec::new(),
    }
}

/// Issue 47: a card's budget of tool calls counts the calls bosun allowed every run of it.
#[test]
fn a_cards_budget_of_tool_calls_is_reached_by_two_runs_together() {
    let (card, a, b) = (CardId::new(), RunId::new(), RunId::new());
    let caps = CardBudgets {
        title: "Fix login".into(),
        budget: Budget {
            tool_calls: Some(3),
            ..Budget::default()
        },
        project: None,
    };
    let calls = |id, n| UsageRow {
        allowed_calls: n,
        ..row(id, card, None, NOON, 0, 0)
    };
    let spend = Spend::default();
    spend.count(&calls(a, 1));
    spend.count(&calls(b, 1));
    let day = bosun_shared::usage::day_of(Timestamp::from_millis(NOON));
    assert_eq!(spend.reached(&caps, card, &day), None);
    spend.count(&calls(a, 2));
    let reached = spend.reached(&caps, card, &day).expect("3 of 3");
    assert_eq!(reached.reached, Reached::ToolCalls { made: 3, cap: 3 });
    assert_eq!(reached.grant.tool_calls, Some(3), "as much again");
    assert_eq!(spend.card(card).calls, 3);
}

fn caps(card_usd: Option<u64>, project: Option<(ProjectId, u64)>) -> CardBudgets {
    CardBudgets {
        title: "Fix login".into(),
        budget: Budget {
            micro_usd: card_usd,
            ..Budget::default()
        },
        project: project.map(|(id, usd)| ProjectBudget {
            id,
            name: "web".into(),
            daily: Budget {
                micro_usd: Some(usd),
                ..Budget::default()
            },
        }),
    }
}

#[test]
fn a_run_counted_again_replaces_what_it_counted_and_days_are_apart() {
    let (card, project) = (CardId::new(), ProjectId::new());
    let (a, b, c) = (RunId::new(), RunId::new(), RunId::new());
    let spend = Spend::default();
    spend.count(&row(a, card, Some(project), NOON, 1_000_000, 100));
    spend.count(&row(a, card, Some(project), NOON, 1_500_000, 150));
    spend.count(&row(b, card, Some(project), NOON, 500_000, 50));
    spend.count(&row(c, card, Some(project), NOON + DAY, 700_000, 70));
    assert_eq!(
        spend.card(card),
        Spent {
            micro_usd: Some(2_700_000),
            tokens: 270,
            ..Spent::default()
        }
    );
    let day = bosun_shared::usage::day_of(Timestamp::from_millis(NOON));
    assert_eq!(
        spend.day(project, &day),
        Spent {
            micro_usd: Some(2_000_000),
            tokens: 200,
            ..Spent::default()
        }
    );
    // Loaded from the rows as saved, the sums are the same.
    let loaded = Spend::load(
        [
            row(a, card, Some(project), NOON, 1_500_000, 150),
            row(b, card, Some(project), NOON, 500_000, 50),
            row(c, card, Some(project), NOON + DAY, 700_000, 70),
        ],
        Vec::new(),
    );
    assert_eq!(loaded.card(card), spend.card(card));
    assert_eq!(loaded.day(project, &day), spend.day(project, &day));
}

#[test]
fn the_card_is_reached_first_then_the_projects_day_and_a_grant_is_given_once() {
    let (card, project) = (CardId::new(), ProjectId::new());
    let spend = Spend::default();
    let day = bosun_shared::usage::day_of(Timestamp::from_millis(NOON));
    spend.count(&row(RunId::new(), card, Some(project), NOON, 2_040_000, 10));
    let both = caps(Some(2_000_000), Some((project, 1_000_000)));
    let r = spend.reached(&both, card, &day).expect("the card's");
    assert_eq!(
        r.scope.reached_words(&r.reached),
        "budget reached: card 'Fix login' $2.04 of $2.00"
    );
    assert_eq!(r.grant.micro_usd, Some(2_000_000));
    // Five runs' approvals allowed at once: more is given once.
    let given: Vec<_> = (0..5)
        .filter_map(|_| spend.grant(&both, &r.scope, &r.grant))
        .collect();
    assert_eq!(given.len(), 1);
    assert_eq!(given[0].0.more.micro_usd, Some(2_000_000));
    assert!(!spend.still_reached(&both, &r.scope));
    // Then the project's day, which has no grant.
    let p = spend.reached(&both, card, &day).expect("the project's day");
    assert_eq!(
        p.scope.reached_words(&p.reached),
        format!("daily budget reached: project 'web' on {day} $2.04 of $1.00")
    );
    // Another day of the project is not reached; a card without caps never is.
    let next = bosun_shared::usage::day_of(Timestamp::from_millis(NOON + DAY));
    assert_eq!(spend.reached(&both, card, &next), None);
    assert_eq!(spend.reached(&caps(None, None), card, &day), None);
    // A grant that could not be saved is put back.
    let (g, before) = spend
        .grant(&both, &p.scope, &p.grant)
        .expect("reached, so granted");
    spend.ungrant(&g.key, before);
    assert!(spend.still_reached(&both, &p.scope));
    assert!(matches!(p.reached, Reached::Cost { .. }));
    let scope = BudgetScope::Card {
        card,
        title: "Fix login".into(),
    };
    assert_eq!(spend.granted(&scope).micro_usd, Some(2_000_000));
}
