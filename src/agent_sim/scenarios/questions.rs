//! The question scenarios: (a) seed 000's two rounds of questions, (e) one question in
//! both request shapes, (f) a multi-select question. Question texts are part of the
//! contract with the integration tests: change them only together.

use serde_json::{Value, json};

use super::super::turn::{Request, Shape, Turn};
use super::answer;

const ASK: &str = "ask_user_question";
const QUESTION_TIMEOUT: u64 = 600;

const GOAL_QUESTION: &str = "Thảo muốn tập trung vào mục tiêu nào?";
const HORIZON_QUESTION: &str = "Thời gian nắm giữ dự kiến?";
const CHANNEL_QUESTION: &str = "Bạn muốn nhận báo cáo qua kênh nào?";
const ENVIRONMENT_QUESTION: &str = "Triển khai lên môi trường nào?";
const SECTOR_QUESTION: &str = "Nhóm ngành quan tâm?";

fn other_option() -> Value {
    json!({"label": "Khác", "description": "Nhập giá trị tùy chỉnh", "input": true})
}

/// Seed 000's two questions, verbatim (fixtures seed000/02).
fn seed_questions() -> Vec<Value> {
    vec![
        json!({
            "question": GOAL_QUESTION,
            "header": "Mục tiêu chính",
            "multiSelect": false,
            "options": [
                {"label": "Cổ tức bền vững (Recommended)", "description": "Tập trung cổ phiếu trả cổ tức đều"},
                {"label": "Tăng trưởng dài hạn", "description": "Lợi nhuận từ giá tăng trưởng"},
                other_option(),
            ],
        }),
        json!({
            "question": HORIZON_QUESTION,
            "header": "Kỳ hạn đầu tư",
            "multiSelect": false,
            "options": [
                {"label": "Trên 3 năm", "description": "Tích lũy dài hạn"},
                {"label": "1-3 năm", "description": "Theo chu kỳ ngành"},
                other_option(),
            ],
        }),
    ]
}

fn channel_question() -> Value {
    json!({
        "question": CHANNEL_QUESTION,
        "header": "Kênh báo cáo",
        "multiSelect": false,
        "options": [
            {"label": "Email", "description": "Gửi qua email"},
            {"label": "Telegram", "description": "Tin nhắn Telegram"},
            other_option(),
        ],
    })
}

fn environment_question() -> Value {
    json!({
        "question": ENVIRONMENT_QUESTION,
        "header": "Môi trường",
        "multiSelect": false,
        "options": [
            {"label": "Staging", "description": "Thử nghiệm"},
            {"label": "Production (Recommended)", "description": "Môi trường thật"},
        ],
    })
}

fn sector_question() -> Value {
    json!({
        "question": SECTOR_QUESTION,
        "header": "Ngành",
        "multiSelect": true,
        "options": [
            {"label": "Ngân hàng"},
            {"label": "Thép (Steel)"},
            {"label": "Bất động sản"},
            other_option(),
        ],
    })
}

fn ask_action(questions: Vec<Value>) -> Value {
    json!({"name": ASK, "args": {"questions": questions}})
}

/// Shape B, as seed 000 sends it.
fn shape_b(questions: Vec<Value>) -> Request {
    Request {
        shape: Shape::B { timeout_seconds: QUESTION_TIMEOUT },
        actions: vec![ask_action(questions)],
        review_configs: vec![json!({"action_name": ASK, "allowed_decisions": ["approve", "edit", "reject"]})],
        expires_after: None,
    }
}

/// Shape A: the same kind of question, all in the start block.
fn shape_a(questions: Vec<Value>) -> Request {
    Request {
        shape: Shape::A { message_id: None },
        actions: vec![ask_action(questions)],
        review_configs: vec![json!({
            "action_name": ASK,
            "allowed_decisions": ["approve", "edit", "reject"],
            "timeout": QUESTION_TIMEOUT,
        })],
        expires_after: None,
    }
}

fn todos(step: &str) -> Value {
    json!({"todos": [{"content": step, "status": "in_progress"}]})
}

/// (a) Seed 000's flow: two rounds of questions, then a summary.
pub(super) async fn ask_twice(turn: &Turn) {
    turn.thinking("Người dùng muốn được hỏi hai lần. Chuẩn bị câu hỏi đầu tiên.");
    let first = "Chuẩn bị câu hỏi lần 1";
    turn.tool_group(first, "tc-1", "write_todos", todos(first));
    let Some(round1) = turn.ask(shape_b(seed_questions())).await else {
        return;
    };
    let second = "Chuẩn bị câu hỏi lần 2";
    turn.tool_group(second, "tc-2", "write_todos", todos(second));
    let Some(round2) = turn.ask(shape_b(vec![channel_question()])).await else {
        return;
    };
    turn.text(
        &format!(
            "Cảm ơn! Tổng kết: mục tiêu = {}; kỳ hạn = {}; kênh = {}",
            answer(&round1, GOAL_QUESTION),
            answer(&round1, HORIZON_QUESTION),
            answer(&round2, CHANNEL_QUESTION),
        ),
        true,
    );
}

/// (e) The same question in shape A, then in shape B.
pub(super) async fn shapes(turn: &Turn) {
    let Some(first) = turn.ask(shape_a(vec![environment_question()])).await else {
        return;
    };
    let Some(second) = turn.ask(shape_b(vec![environment_question()])).await else {
        return;
    };
    turn.text(&format!("A: {}; B: {}", answer(&first, ENVIRONMENT_QUESTION), answer(&second, ENVIRONMENT_QUESTION)), true);
}

/// (f) A multi-select question.
pub(super) async fn multi(turn: &Turn) {
    let Some(reply) = turn.ask(shape_b(vec![sector_question()])).await else {
        return;
    };
    turn.text(&format!("Bạn chọn: {}", answer(&reply, SECTOR_QUESTION)), true);
}
