#pragma once
/// Public-domain English prose (Jane Austen, "Pride and Prejudice", 1813; Herman Melville,
/// "Moby-Dick", 1851) that synthetic load-test prompts are cut from.

namespace lf::loadtest {

/// A few paragraphs of plain English text.
inline const char* passage_text() {
  return "It is a truth universally acknowledged, that a single man in possession of a good "
         "fortune, must be in want of a wife. However little known the feelings or views of such "
         "a man may be on his first entering a neighbourhood, this truth is so well fixed in the "
         "minds of the surrounding families, that he is considered as the rightful property of "
         "some one or other of their daughters. \"My dear Mr. Bennet,\" said his lady to him one "
         "day, \"have you heard that Netherfield Park is let at last?\" Mr. Bennet replied that "
         "he had not. \"But it is,\" returned she; \"for Mrs. Long has just been here, and she "
         "told me all about it.\" Mr. Bennet made no answer. \"Do not you want to know who has "
         "taken it?\" cried his wife impatiently. \"You want to tell me, and I have no objection "
         "to hearing it.\" This was invitation enough. Call me Ishmael. Some years ago, never "
         "mind how long precisely, having little or no money in my purse, and nothing particular "
         "to interest me on shore, I thought I would sail about a little and see the watery part "
         "of the world. It is a way I have of driving off the spleen and regulating the "
         "circulation. Whenever I find myself growing grim about the mouth; whenever it is a "
         "damp, drizzly November in my soul; whenever I find myself involuntarily pausing before "
         "coffin warehouses, and bringing up the rear of every funeral I meet; and especially "
         "whenever my hypos get such an upper hand of me, that it requires a strong moral "
         "principle to prevent me from deliberately stepping into the street, and methodically "
         "knocking people's hats off, then, I account it high time to get to sea as soon as I "
         "can. This is my substitute for pistol and ball. ";
}

} // namespace lf::loadtest
