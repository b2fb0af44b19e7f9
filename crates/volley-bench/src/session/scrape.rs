//! `--server-metrics`: the server's histograms scraped before the run, of the run's method or of
//! each gRPC method of its mix (none for its HTTP entries), and again after it, the difference
//! put into the report.

use tokio::runtime::Runtime;

use super::error::RunError;
use crate::{
    plan::{Plan, mix::MixCall},
    report::{Report, server},
};

/// The scrape before the run.
pub(super) struct ServerScrape {
    url: String,
    methods: Vec<Option<(String, server::Snapshot)>>,
}

fn scrape(rt: &Runtime, url: &str) -> Result<String, RunError> {
    rt.block_on(server::fetch(url))
        .map_err(RunError::ServerMetrics)
}

impl ServerScrape {
    /// Scrapes `url` for the plan's methods.
    pub(super) fn before(rt: &Runtime, url: &str, plan: &Plan) -> Result<ServerScrape, RunError> {
        let calls: Vec<Option<&str>> = if plan.mix.is_empty() {
            vec![Some(plan.call.as_str())]
        } else {
            plan.mix
                .iter()
                .map(|m| match &m.call {
                    MixCall::Grpc(c) => Some(c.as_str()),
                    MixCall::Http { .. } => None,
                })
                .collect()
        };
        let text = scrape(rt, url)?;
        let methods = calls
            .into_iter()
            .map(|call| {
                call.map(|c| {
                    let method = server::method_label(c);
                    let before = server::snapshot(&text, &method)
                        .map_err(|e| RunError::ServerMetrics(format!("{url}: {e}")))?;
                    Ok((method, before))
                })
                .transpose()
            })
            .collect::<Result<_, RunError>>()?;
        Ok(ServerScrape {
            url: url.to_owned(),
            methods,
        })
    }

    /// The server's figures for the run: into the report, or into each of its mix's entries.
    pub(super) fn after(self, rt: &Runtime, report: &mut Report) -> Result<(), RunError> {
        let text = scrape(rt, &self.url)?;
        let mut figures = Vec::new();
        for m in self.methods {
            figures.push(match m {
                None => None,
                Some((method, before)) => {
                    let after = server::snapshot(&text, &method)
                        .map_err(|e| RunError::ServerMetrics(format!("{}: {e}", self.url)))?;
                    Some(server::figures(&self.url, &method, &before, &after))
                }
            });
        }
        if report.methods.is_empty() {
            report.volley.server_metrics = figures.pop().flatten();
        } else {
            for (m, f) in report.methods.iter_mut().zip(figures) {
                m.report.volley.server_metrics = f;
            }
        }
        Ok(())
    }
}
