//! The operator of an in-process host, scripted: every danger question answered the same way,
//! and kept.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use toolhost_core::executor::{Confirm, DangerRequest, Decision};

/// Answers every danger question with `decision`; [`Operator::asked`] says what it was asked.
pub struct Operator {
    decision: Decision,
    asked: Mutex<Vec<DangerRequest>>,
}

impl Operator {
    pub fn answering(decision: Decision) -> Arc<Operator> {
        Arc::new(Operator { decision, asked: Mutex::new(Vec::new()) })
    }

    /// The questions so far.
    pub fn asked(&self) -> Vec<DangerRequest> {
        self.asked.lock().unwrap().clone()
    }
}

impl Confirm for Operator {
    fn confirm<'a>(&'a self, req: &'a DangerRequest) -> Pin<Box<dyn Future<Output = Decision> + Send + 'a>> {
        self.asked.lock().unwrap().push(req.clone());
        Box::pin(async { self.decision.clone() })
    }
}
