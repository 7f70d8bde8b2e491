package queen

// AnswerHoldMin is answerHoldMin, for the external tests.
const AnswerHoldMin = answerHoldMin
