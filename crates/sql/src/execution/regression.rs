//! The aggregates of two variables, `corr(y, x)`, `covar_pop` / `covar_samp` and the `regr_*`
//! family: PostgreSQL's float8 versions, with its running sums (N, Σx, Sxx, Σy, Syy, Sxy by the
//! Youngs–Cramer updates of `float8_regr_accum`) and its formulas, computed in the same order so
//! that the results are the same doubles. A row where either argument is NULL is left out.

use steady_types::Value;

/// Which of the two-variable aggregates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Regression {
    Corr,
    CovarPop,
    CovarSamp,
    Slope,
    Intercept,
    R2,
    Count,
    AvgX,
    AvgY,
    Sxx,
    Syy,
    Sxy,
}

const NAMES: &[(&str, Regression)] = &[
    ("corr", Regression::Corr),
    ("covar_pop", Regression::CovarPop),
    ("covar_samp", Regression::CovarSamp),
    ("regr_slope", Regression::Slope),
    ("regr_intercept", Regression::Intercept),
    ("regr_r2", Regression::R2),
    ("regr_count", Regression::Count),
    ("regr_avgx", Regression::AvgX),
    ("regr_avgy", Regression::AvgY),
    ("regr_sxx", Regression::Sxx),
    ("regr_syy", Regression::Syy),
    ("regr_sxy", Regression::Sxy),
];

impl Regression {
    pub fn by_name(name: &str) -> Option<Regression> {
        NAMES.iter().find(|(n, _)| *n == name).map(|&(_, r)| r)
    }

    pub fn name(self) -> &'static str {
        NAMES
            .iter()
            .find(|(_, r)| *r == self)
            .map_or("regr", |&(n, _)| n)
    }
}

/// The running sums over the rows so far.
#[derive(Debug, Clone, Copy, Default)]
pub struct RegressionSums {
    n: f64,
    sx: f64,
    sxx: f64,
    sy: f64,
    syy: f64,
    sxy: f64,
}

impl RegressionSums {
    /// Adds the row `(y, x)`.
    pub fn add(&mut self, y: f64, x: f64) {
        let n = self.n + 1.0;
        let (sx, sy) = (self.sx + x, self.sy + y);
        if self.n > 0.0 {
            let (dx, dy) = (x * n - sx, y * n - sy);
            let scale = 1.0 / (n * self.n);
            self.sxx += dx * dx * scale;
            self.syy += dy * dy * scale;
            self.sxy += dx * dy * scale;
        }
        (self.n, self.sx, self.sy) = (n, sx, sy);
    }

    /// The aggregate's value: NULL over no rows, and where PostgreSQL's is (a zero spread, one
    /// row for a sample covariance).
    pub fn result(&self, which: Regression) -> Value {
        let Self {
            n,
            sx,
            sxx,
            sy,
            syy,
            sxy,
        } = *self;
        if which == Regression::Count {
            return Value::BigInt(n as i64);
        }
        let value = match which {
            _ if n < 1.0 => None,
            Regression::CovarPop => Some(sxy / n),
            Regression::CovarSamp => (n >= 2.0).then(|| sxy / (n - 1.0)),
            Regression::Corr => (sxx != 0.0 && syy != 0.0).then(|| sxy / (sxx * syy).sqrt()),
            Regression::Slope => (sxx != 0.0).then(|| sxy / sxx),
            Regression::Intercept => (sxx != 0.0).then(|| (sy - sx * sxy / sxx) / n),
            Regression::R2 if sxx == 0.0 => None,
            Regression::R2 if syy == 0.0 => Some(1.0),
            Regression::R2 => Some((sxy * sxy) / (sxx * syy)),
            Regression::AvgX => Some(sx / n),
            Regression::AvgY => Some(sy / n),
            Regression::Sxx => Some(sxx),
            Regression::Syy => Some(syy),
            Regression::Sxy => Some(sxy),
            Regression::Count => None,
        };
        value.map_or(Value::Null, Value::Double)
    }
}
