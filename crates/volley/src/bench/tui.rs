//! `volley bench --tui`: the run drawn full-screen once per tick (ratatui on crossterm): the rate
//! achieved against the rate asked, with its history; p50/p99/p99.9 from the intended send and
//! from the actual send; statuses; calls in flight, pacer lag and generator CPU; one row per
//! method under a mix. `q` (or Esc, or Ctrl-C) stops the run; the report is written as always.

use std::{collections::VecDeque, io::Stdout, time::Duration};

use anyhow::Result;
use ratatui::{
    Terminal,
    backend::CrosstermBackend,
    crossterm::{
        event::{self, Event, KeyCode, KeyEventKind, KeyModifiers},
        execute,
        terminal::{EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode},
    },
    layout::{Constraint, Layout},
    style::{Modifier, Style},
    text::Line,
    widgets::{Block, Borders, Paragraph, Row, Sparkline, Table},
};
use volley_bench::live::{Quantiles, Tick};

/// Ticks of rate history kept for the sparkline.
const HISTORY: usize = 240;

/// The live view.
pub(super) struct Tui {
    terminal: Terminal<CrosstermBackend<Stdout>>,
    title: String,
    rates: VecDeque<u64>,
}

fn ms(ns: u64) -> String {
    format!("{:.2} ms", ns as f64 / 1e6)
}

fn quantile_cells(q: &Quantiles) -> [String; 3] {
    [ms(q.p50), ms(q.p99), ms(q.p999)]
}

impl Tui {
    /// Takes over the terminal (raw mode, alternate screen).
    pub(super) fn open(title: String) -> Result<Tui> {
        enable_raw_mode()?;
        let mut out = std::io::stdout();
        execute!(out, EnterAlternateScreen)?;
        let mut terminal = Terminal::new(CrosstermBackend::new(out))?;
        terminal.hide_cursor()?;
        terminal.clear()?;
        let mut tui = Tui {
            terminal,
            title,
            rates: VecDeque::new(),
        };
        tui.draw_waiting()?;
        Ok(tui)
    }

    fn draw_waiting(&mut self) -> Result<()> {
        let title = self.title.clone();
        self.terminal.draw(|f| {
            let block = Block::default().borders(Borders::ALL).title(title);
            f.render_widget(
                Paragraph::new("starting...   q: stop the run").block(block),
                f.area(),
            );
        })?;
        Ok(())
    }

    /// Whether `q`, Esc or Ctrl-C was pressed.
    pub(super) fn quit_asked(&mut self) -> Result<bool> {
        while event::poll(Duration::ZERO)? {
            if let Event::Key(k) = event::read()? {
                if k.kind != KeyEventKind::Press {
                    continue;
                }
                let ctrl_c =
                    k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                if ctrl_c || matches!(k.code, KeyCode::Char('q') | KeyCode::Esc) {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// Draws a tick.
    pub(super) fn draw(&mut self, t: &Tick) -> Result<()> {
        self.rates.push_back(t.rate.round() as u64);
        if self.rates.len() > HISTORY {
            self.rates.pop_front();
        }
        let rates: Vec<u64> = self.rates.iter().copied().collect();
        let title = self.title.clone();
        let state = if t.last { "done" } else { "running" };
        let asked = t.intended_rate.map_or_else(
            || "as fast as it goes".to_owned(),
            |r| format!("{r:.0}/s asked"),
        );
        let summary = vec![
            Line::from(format!(
                "{state}  {:.1} s   rate {:.0}/s ({asked})   in flight {}   pacer lag {:.2} ms   generator CPU {:.2} cores",
                t.elapsed, t.rate, t.in_flight, t.lag_ms, t.cpu
            )),
            Line::from(format!(
                "errors {} of {} calls this interval   statuses: {}",
                t.errors,
                t.calls,
                if t.statuses.0.is_empty() {
                    "-".to_owned()
                } else {
                    t.statuses
                        .0
                        .iter()
                        .map(|(c, n)| format!("{c} {n}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            )),
        ];
        let head = Style::default().add_modifier(Modifier::BOLD);
        let latency = Table::new(
            [
                Row::new(
                    std::iter::once("latency (from the intended send)".to_owned())
                        .chain(quantile_cells(&t.latency)),
                ),
                Row::new(
                    std::iter::once("service time (from the actual send)".to_owned())
                        .chain(quantile_cells(&t.service)),
                ),
            ],
            [
                Constraint::Length(38),
                Constraint::Length(12),
                Constraint::Length(12),
                Constraint::Length(12),
            ],
        )
        .header(Row::new(["", "p50", "p99", "p99.9"]).style(head))
        .block(
            Block::default()
                .borders(Borders::ALL)
                .title(" this interval "),
        );
        let methods = Table::new(
            t.methods.iter().map(|m| {
                Row::new([
                    m.call.clone(),
                    format!("{:.0}/s", m.calls as f64 / t.interval.max(1e-9)),
                    m.errors.to_string(),
                    ms(m.latency.p50),
                    ms(m.latency.p99),
                    ms(m.latency.p999),
                ])
            }),
            [
                Constraint::Min(24),
                Constraint::Length(10),
                Constraint::Length(8),
                Constraint::Length(11),
                Constraint::Length(11),
                Constraint::Length(11),
            ],
        )
        .header(Row::new(["method", "rate", "errors", "p50", "p99", "p99.9"]).style(head))
        .block(Block::default().borders(Borders::ALL).title(" per method "));
        let method_rows = if t.methods.is_empty() {
            0
        } else {
            t.methods.len() as u16 + 3
        };
        self.terminal.draw(|f| {
            let outer = Block::default().borders(Borders::ALL).title(title);
            let inner = outer.inner(f.area());
            f.render_widget(outer, f.area());
            let [top, lat, meth, spark, foot] = Layout::vertical([
                Constraint::Length(2),
                Constraint::Length(5),
                Constraint::Length(method_rows),
                Constraint::Min(3),
                Constraint::Length(1),
            ])
            .areas(inner);
            f.render_widget(Paragraph::new(summary), top);
            f.render_widget(latency, lat);
            f.render_widget(methods, meth);
            f.render_widget(
                Sparkline::default()
                    .block(Block::default().borders(Borders::ALL).title(" calls/s "))
                    .data(&rates),
                spark,
            );
            f.render_widget(
                Paragraph::new("q: stop the run (the report is still written)"),
                foot,
            );
        })?;
        Ok(())
    }

    /// Gives the terminal back.
    pub(super) fn close(mut self) {
        let _ = disable_raw_mode();
        let _ = execute!(self.terminal.backend_mut(), LeaveAlternateScreen);
        let _ = self.terminal.show_cursor();
    }
}
